import { type OsvAffected, osvAffectsWith } from './osv.js';
import { compareApk, compareDpkg, compareRpm } from './package-versions.js';

/**
 * Backport-aware matching (issue 29). Distributions fix a vulnerability in their build of an
 * upstream version (Debian's `OpenSSH_9.2p1 Debian-2+deb12u3` carries the fix for CVE-2024-6387;
 * upstream's 9.2p1 does not). A banner that names the distribution build is read into the
 * distribution's source package and package version; the distribution's own OSV records then say
 * whether that build is fixed, which overrides the upstream CPE match.
 */

export type DistroFamily = 'debian' | 'ubuntu' | 'redhat' | 'alpine';

/** What a banner says of the distribution build of a service. */
export interface DistroBuild {
  family: DistroFamily;
  /** The release when the version names it (`deb12u3` → `12`, `ubuntu0.22.04.1` → `22.04`), else null. */
  release: string | null;
  /** Source package names it may be (several when the name depends on the release: `mariadb`, `mariadb-10.6`). */
  packages: string[];
  /** The package version as the banner gives it (never an epoch), or null when it names the distribution only. */
  version: string | null;
  /** The text read. */
  marker: string;
}

export const FAMILY_NAME: Record<DistroFamily, string> = { debian: 'Debian', ubuntu: 'Ubuntu', redhat: 'Red Hat Enterprise Linux', alpine: 'Alpine Linux' };

/** The family and release of an OSV ecosystem (`Debian:12`, `Ubuntu:22.04:LTS`, `Ubuntu:Pro:18.04:LTS`, `Alpine:v3.19`, `Red Hat:enterprise_linux:9::appstream`, `AlmaLinux:9`, `Rocky Linux:9`). */
export function ecosystemFamily(ecosystem: string): { family: DistroFamily; release: string | null } | null {
  const parts = ecosystem.trim().split(':');
  const head = parts[0]!.toLowerCase();
  if (head === 'debian') return { family: 'debian', release: parts[1] ?? null };
  if (head === 'ubuntu') return { family: 'ubuntu', release: parts.find((p) => /^\d\d\.\d\d$/.test(p)) ?? null };
  if (head === 'alpine') return { family: 'alpine', release: parts[1]?.replace(/^v/, '') ?? null };
  if (head === 'red hat' || head === 'almalinux' || head === 'rocky linux') {
    const rel = head === 'red hat' ? /(?:^|[^\d])(\d+)(?:\.\d+)*(?::|$)/.exec(parts.slice(1).join(':'))?.[1] : parts[1]?.split('.')[0];
    return { family: 'redhat', release: rel ?? null };
  }
  return null;
}

/** The matcher's index key of a distribution package, whatever the release: `distro:<family>:<package>`. */
export function distroKey(family: DistroFamily, pkg: string): string {
  return `distro:${family}:${pkg.trim().toLowerCase()}`;
}

/** The distribution index keys of an OSV record's affected packages (empty for other ecosystems). */
export function distroKeysOf(affected: OsvAffected[]): string[] {
  const keys = new Set<string>();
  for (const a of affected) {
    const f = ecosystemFamily(a.package.ecosystem);
    if (f) keys.add(distroKey(f.family, a.package.name));
  }
  return [...keys];
}

export function isDistroEcosystem(ecosystem: string): boolean {
  return ecosystemFamily(ecosystem) !== null;
}

const compareFor: Record<DistroFamily, (a: string, b: string) => number> = { debian: compareDpkg, ubuntu: compareDpkg, redhat: compareRpm, alpine: compareApk };

function debianRelease(revision: string): string | null {
  const m = /(?:\+|~)deb(\d+)u\d+/.exec(revision) ?? /~deb(\d+)/.exec(revision) ?? /\+deb(\d+)/.exec(revision);
  return m ? m[1]! : null;
}

function ubuntuRelease(revision: string): string | null {
  return /ubuntu\d*\.(\d\d\.\d\d)(?:\.|$)/.exec(revision)?.[1] ?? null;
}

/** A Debian or Ubuntu revision's family and release. */
function debLike(revision: string): { family: 'debian' | 'ubuntu'; release: string | null } | null {
  if (/ubuntu/i.test(revision)) return { family: 'ubuntu', release: ubuntuRelease(revision) };
  if (/deb\d+/.test(revision) || /^\d+(\.\d+)?$/.test(revision)) return { family: 'debian', release: debianRelease(revision) };
  return null;
}

const majorMinor = (v: string) => /^(\d+\.\d+)/.exec(v)?.[1] ?? v;

interface BannerFacts {
  product: string | null;
  version: string | null;
  /** The banner line (core signatures) or nmap's extra information. */
  evidence: string | null;
}

/**
 * The distribution build a service's banner names, or null. Read, in order:
 * - OpenSSH: `OpenSSH_9.2p1 Debian-2+deb12u3` / `OpenSSH_8.9p1 Ubuntu-3ubuntu0.10` (the banner),
 *   or nmap's version `9.2p1 Debian 2+deb12u3`: package `openssh`, version upstream-revision;
 * - MySQL from Ubuntu or Debian: `8.0.36-0ubuntu0.22.04.1`, `5.5.62-0+deb8u1`: package `mysql-8.0`
 *   (`mysql-dfsg-5.1` in older Debian releases);
 * - MariaDB from Debian or Ubuntu: `10.11.6-MariaDB-0+deb12u1`, `5.5.5-10.6.16-MariaDB-0ubuntu0.22.04.1`:
 *   package `mariadb` or `mariadb-10.11` (the name depends on the release); the MariaDB
 *   Foundation's own builds (`+maria~deb12`) are not the distribution's and are left alone;
 * - a Red Hat build (`(Red Hat Enterprise Linux)`, `(CentOS)`, `(Rocky Linux)`, `(AlmaLinux)`, or
 *   an `elN` release) and an Alpine one (`-rN` with an Alpine marker): the distribution, and
 *   the package version only where the banner gives the release (`2.4.37-62.el8`).
 */
export function distroBuildOf(s: BannerFacts): DistroBuild | null {
  const version = s.version?.trim() ?? '';
  const text = [s.version, s.evidence].filter((x): x is string => !!x).join(' ');
  const product = (s.product ?? '').toLowerCase();

  const ssh = /OpenSSH_([\w.]+)[ -](Debian|Ubuntu|Raspbian)-(\S+)/.exec(text) ?? (product.includes('openssh') ? /^([\w.]+) (Debian|Ubuntu|Raspbian) (\S+)/.exec(version) : null);
  if (ssh && ssh[2] !== 'Raspbian') {
    const family = ssh[2] === 'Ubuntu' ? 'ubuntu' : 'debian';
    const revision = ssh[3]!;
    return { family, release: family === 'ubuntu' ? ubuntuRelease(revision) : debianRelease(revision), packages: ['openssh'], version: `${ssh[1]}-${revision}`, marker: ssh[0] };
  }

  const maria = /(?:^|[\s/])(?:5\.5\.5-)?(\d+\.\d+\.\d+)-MariaDB-([\w.+~:]+?)(?:-log)?(?:\s|$)/.exec(` ${text} `);
  if (maria && !/maria~/i.test(maria[2]!)) {
    const like = debLike(maria[2]!);
    if (like) return { ...like, packages: ['mariadb', `mariadb-${majorMinor(maria[1]!)}`], version: `${maria[1]}-${maria[2]}`, marker: maria[0].trim() };
  }

  const mysql = product.includes('mysql') || /mysql/i.test(s.evidence ?? '') ? /^(\d+\.\d+\.\d+)-(\d[\w.+~]*?(?:ubuntu[\w.+~]*?|\+deb\d+u\d+))(?:-log)?$/.exec(version) : null;
  const mysqlLike = mysql ? debLike(mysql[2]!) : null;
  if (mysql && mysqlLike) {
    const mm = majorMinor(mysql[1]!);
    return { ...mysqlLike, packages: [`mysql-${mm}`, `mysql-dfsg-${mm}`], version: `${mysql[1]}-${mysql[2]}`, marker: mysql[0] };
  }

  const rh = /\((Red Hat Enterprise Linux|Red Hat|CentOS|CentOS Stream|Rocky Linux|AlmaLinux)\)/i.exec(text) ?? /[.-](el(\d+))(?:[._]\d+)*\b/.exec(text);
  if (rh) {
    const pkg = rhelPackage(product);
    const full = /^(\d[\w.]*-\d[\w.+]*\.el(\d+)[\w.+]*)$/.exec(version);
    return pkg ? { family: 'redhat', release: full?.[2] ?? null, packages: [pkg], version: full ? full[1]! : null, marker: rh[0] } : null;
  }

  const alpine = /\bAlpine\b/i.exec(text);
  if (alpine) {
    const pkg = product.includes('openssh') ? 'openssh' : product.includes('nginx') ? 'nginx' : null;
    const full = /^(\d[\w.]*-r\d+)$/.exec(version);
    return pkg ? { family: 'alpine', release: null, packages: [pkg], version: full ? full[1]! : null, marker: alpine[0] } : null;
  }
  return null;
}

/** Red Hat's source package of a product nmap names. */
function rhelPackage(product: string): string | null {
  if (product.includes('openssh')) return 'openssh';
  if (product.includes('apache httpd') || product === 'apache') return 'httpd';
  if (product.includes('nginx')) return 'nginx';
  if (product.includes('mariadb')) return 'mariadb';
  if (product.includes('mysql')) return 'mysql';
  if (product.includes('postfix')) return 'postfix';
  if (product.includes('dovecot')) return 'dovecot';
  if (product.includes('vsftpd')) return 'vsftpd';
  if (product.includes('bind')) return 'bind';
  return null;
}

/** A distribution advisory as the matcher holds it. */
export interface DistroAdvisory {
  id: string;
  cveId: string;
  aliases: string[];
  affected: OsvAffected[];
}

/** What a distribution's records say of one build and one CVE (stored with the finding as its evidence). */
export interface DistroVerdict {
  distribution: string;
  ecosystem: string | null;
  package: string;
  version: string | null;
  verdict: 'fixed' | 'affected' | 'unknown';
  fixedIn: string | null;
  advisoryId: string | null;
}

const upstreamOf = (v: string) => {
  const noEpoch = v.replace(/^\d+:/, '');
  const dash = noEpoch.lastIndexOf('-');
  return dash < 0 ? noEpoch : noEpoch.slice(0, dash);
};

/** A banner version given the epoch the distribution's own records use for the package (banners never carry one). */
function withEpoch(version: string, a: OsvAffected): string {
  if (/^\d+:/.test(version)) return version;
  for (const r of a.ranges ?? [])
    for (const e of r.events) {
      const v = e.fixed ?? e.introduced ?? e.last_affected;
      const m = v && v !== '0' ? /^(\d+):/.exec(v) : null;
      if (m) return `${m[1]}:${version}`;
    }
  const listed = a.versions?.find((v) => /^\d+:/.test(v));
  return listed ? `${/^(\d+):/.exec(listed)![1]}:${version}` : version;
}

function fixedEvent(a: OsvAffected): string | null {
  for (const r of a.ranges ?? []) for (const e of r.events) if (e.fixed) return e.fixed;
  return null;
}

/** The versions an entry names (events and listed versions). */
function entryVersions(a: OsvAffected): string[] {
  return [...(a.ranges ?? []).flatMap((r) => r.events.flatMap((e) => [e.introduced, e.fixed, e.last_affected].filter((v): v is string => !!v && v !== '0'))), ...(a.versions ?? [])];
}

/** Named advisories (DSA, DLA, USN, RHSA, ALSA) before a tracker's per-CVE records in the evidence. */
const trackerRecord = (id: string) => /^(DEBIAN|UBUNTU|ALPINE)-CVE-/.test(id);

/**
 * Whether `build` is fixed for `cveId`, by the distribution's records `advisories` (those indexed
 * under its packages). An entry applies when its ecosystem is the build's family and release;
 * when the banner names no release, the entries whose versions share the build's upstream version
 * (Debian 12's `1:9.2p1-2+deb12u3` for `9.2p1-2`). Fixed when at least one applicable entry says
 * so and none says affected; affected when one does; unknown otherwise (no record, no version in
 * the banner, or no release it could belong to), and then the upstream match stands.
 */
export function distroVerdict(build: DistroBuild, cveId: string, advisories: DistroAdvisory[]): DistroVerdict {
  const base: DistroVerdict = {
    distribution: `${FAMILY_NAME[build.family]}${build.release ? ` ${build.release}` : ''}`,
    ecosystem: null,
    package: build.packages[0]!,
    version: build.version,
    verdict: 'unknown',
    fixedIn: null,
    advisoryId: null,
  };
  if (build.version === null) return base;
  const compare = compareFor[build.family];
  const names = new Set(build.packages.map((p) => p.toLowerCase()));
  const upstream = upstreamOf(build.version);
  // FIPS builds (Ubuntu Pro's `…fips…` versions) are their own line: judged by FIPS entries only.
  const fips = /fips/i.test(build.version);
  const sorted = [...advisories].sort((a, b) => Number(trackerRecord(a.id)) - Number(trackerRecord(b.id)) || (a.id < b.id ? -1 : 1));
  let fixed: DistroVerdict | null = null;
  for (const adv of sorted) {
    if (adv.cveId !== cveId && !adv.aliases.includes(cveId)) continue;
    for (const entry of adv.affected) {
      const eco = ecosystemFamily(entry.package.ecosystem);
      if (!eco || eco.family !== build.family || !names.has(entry.package.name.toLowerCase()) || /fips/i.test(entry.package.ecosystem) !== fips) continue;
      if (build.release !== null ? eco.release !== build.release : !entryVersions(entry).some((v) => upstreamOf(v) === upstream)) continue;
      const installed = withEpoch(build.version, entry);
      const found = { ...base, distribution: `${FAMILY_NAME[build.family]}${eco.release ? ` ${eco.release}` : ''}`, ecosystem: entry.package.ecosystem, package: entry.package.name, version: installed, fixedIn: fixedEvent(entry), advisoryId: adv.id };
      if (osvAffectsWith(entry, installed, compare)) return { ...found, verdict: 'affected' };
      if (!fixed && found.fixedIn !== null && compare(installed, found.fixedIn) >= 0) fixed = { ...found, verdict: 'fixed' };
    }
  }
  return fixed ?? base;
}

/** The index keys a distribution build is found under. */
export function distroKeysOfBuild(build: DistroBuild): string[] {
  return build.packages.map((p) => distroKey(build.family, p));
}
