import type { Vulnerability } from '../lib/types';

type Verdict = NonNullable<Vulnerability['distribution']>;

/** One line of what the distribution's records say of the service's build (backports), or nothing. */
export function distributionText(d: Verdict): string {
  const build = `${d.distribution} ${d.package}${d.version ? ` ${d.version}` : ''}`;
  if (d.verdict === 'fixed') return `Fixed in ${d.fixedIn} by ${d.advisoryId} (${build})`;
  if (d.verdict === 'affected') return d.fixedIn ? `${build} is affected; fixed in ${d.fixedIn} (${d.advisoryId})` : `${build} is affected, no fix yet (${d.advisoryId})`;
  return d.version ? `${build}: no ${d.distribution} record covers it` : `${d.distribution} build; the banner gives no package version`;
}

/**
 * A badge after a finding's state, its details on hover: `backport` where the distribution fixed
 * the build, `update` where it has a package version that fixes it; nothing where no record applies
 * (the API still says so).
 */
export function DistributionNote({ distribution }: { distribution: Vulnerability['distribution'] | undefined }) {
  if (!distribution || distribution.verdict === 'unknown' || (distribution.verdict === 'affected' && !distribution.fixedIn)) return null;
  const label = distribution.verdict === 'fixed' ? 'backport' : 'update';
  return (
    <span className={`badge distro-${distribution.verdict}`} title={distributionText(distribution)}>
      {label}
    </span>
  );
}
