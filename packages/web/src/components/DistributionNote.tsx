import type { Vulnerability } from '../lib/types';

type Verdict = NonNullable<Vulnerability['distribution']>;

/** The badge's hover text: the distribution's fix of the build, or the version that fixes it. */
function distributionText(d: Verdict): string {
  const build = `${d.distribution} ${d.package}${d.version ? ` ${d.version}` : ''}`;
  return d.verdict === 'fixed' ? `Fixed in ${d.fixedIn} by ${d.advisoryId} (${build})` : `${build} is affected; fixed in ${d.fixedIn} (${d.advisoryId})`;
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
