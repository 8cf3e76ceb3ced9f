import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Configuration,
  type Cpe,
  type OsvAffected,
  compareVersions,
  cpeMatchApplies,
  deriveCpe,
  isPreReleaseUpdate,
  matchesConfigurations,
  osvAffects,
  parseCpe22,
  parseCpe23,
  sameUpdate,
  splitPackedVersion,
  toSemver,
} from '../src/advisories/matching/index.js';

// Fixtures (packages/server/test/fixtures/advisories/README.md names their sources):
// - nvd-CVE-2021-44228.json: Log4Shell's first configuration as NVD serves it (real matchCriteriaIds);
// - nvd-CVE-2022-26488.json: CPython, with NVD's `3.11.0:alpha1`..`alpha6` criteria;
// - nvd-constructed-version-spellings.json: built in the NVD CVE API 2.0 shape (not real CVEs):
//   Cisco IOS trains and NVD's documented oracle:mysql range example;
// - osv-GO-2023-2102.json: the Go vulnerability database's record (stdlib, two release lines).
const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/advisories/${name}`, import.meta.url), 'utf8'));
const nvdRecords = (name: string): { id: string; configurations: Configuration[] }[] => fixture(name).vulnerabilities.map((v: { cve: unknown }) => v.cve);
const cpe = (s: string): Cpe => {
  const c = s.startsWith('cpe:/') ? parseCpe22(s) : parseCpe23(s);
  if (!c) throw new Error(`not a CPE: ${s}`);
  return c;
};
const derived = (vendor: string, product: string, version: string) => cpe(deriveCpe(vendor, product, version) as string);
const sign = (n: number) => Math.sign(n) + 0;

describe('compareVersions on what services report', () => {
  // [lower, higher, what it is]
  const ordered: [string, string, string][] = [
    // Pre-releases sort before their release, dev < alpha < beta < milestone < rc.
    ['3.11.0a1', '3.11.0', 'CPython alpha'],
    ['3.11.0a7', '3.11.0b1', 'CPython alpha < beta'],
    ['3.11.0b5', '3.11.0rc1', 'CPython beta < rc'],
    ['3.11.0rc2', '3.11.0', 'CPython rc'],
    ['2.0-beta9', '2.0-rc1', 'Log4j beta < rc'],
    ['2.0-beta9', '2.0', 'Log4j beta'],
    ['2.0-rc2', '2.0', 'Log4j rc'],
    ['2.0', '2.0.1', 'Log4j release'],
    ['1.0rc2', '1.0', 'packed rc'],
    ['1.0rc1', '1.0rc2', 'packed rc numbers'],
    ['9.0.0.M1', '9.0.0.M9', 'Tomcat milestones'],
    ['9.0.0.M26', '9.0.0', 'Tomcat milestone < release'],
    ['2.15.0-rc1', '2.15.0', 'Log4j 2.15.0-rc1'],
    ['1.21rc2', '1.21.0', 'Go rc'],
    // Cisco IOS trains: train, then rebuild number, then rebuild letter.
    ['15.2(4)M3', '15.2(4)M10', 'IOS rebuild numbers'],
    ['15.2(4)M', '15.2(4)M1', 'IOS train before its first rebuild'],
    ['12.2(55)SE', '12.2(55)SE1', 'IOS SE train'],
    ['12.2(55)SE9', '12.2(55)SE12', 'IOS SE rebuilds'],
    ['15.1(2)SY', '15.1(2)SY1a', 'IOS SY rebuild letter'],
    ['15.1(2)SY1', '15.1(2)SY1a', 'IOS rebuild letter after the rebuild'],
    ['15.1(2)SY1a', '15.1(2)SY2', 'IOS next rebuild after a letter'],
    ['15.0(2)SE', '15.0(2a)SE', 'IOS interim build after the build it rebuilds'],
    ['15.0(2a)SE', '15.0(2b)SE', 'IOS interim builds by letter'],
    ['15.0(2a)SE', '15.0(3)SE', 'IOS interim build before the next build'],
    ['15.0(2a)SE9', '15.0(2a)SE10', 'IOS rebuilds of an interim build'],
    ['12.2(33)SXJ', '12.2(33a)SXJ', 'IOS interim build, another train'],
    ['12.2(54)SE', '12.2(55)SE', 'IOS build number'],
    ['15.2\\(4\\)m3', '15.2\\(4\\)m10', 'as escaped in a CPE formatted string'],
    // MySQL banners.
    ['5.7.43-log', '5.7.44', 'MySQL -log'],
    ['5.7.44-log', '5.7.45', 'MySQL -log'],
    ['5.5.5-10.6.15-MariaDB', '10.6.16', 'MariaDB behind the 5.5.5- prefix'],
    // Build metadata is ignored, but Debian's + revisions still order.
    ['1.2.2+build.9', '1.2.3', 'semver build'],
    ['1:9.2p1-2', '1:9.2p1-2+deb12u3', 'Debian security update'],
    ['2.4.57-2', '2.4.57-2+deb12u1', 'Debian security update without epoch'],
    // Go toolchains.
    ['go1.20.14', 'go1.21.3', 'Go'],
    ['1.20', 'go1.20.1', 'Go minor release'],
  ];
  it.each(ordered)('%s < %s (%s)', (a, b) => {
    expect(sign(compareVersions(a, b))).toBe(-1);
    expect(sign(compareVersions(b, a))).toBe(1);
  });

  const equal: [string, string, string][] = [
    ['5.7.44-log', '5.7.44', 'MySQL binary log enabled'],
    ['5.7.44-debug', '5.7.44', 'MySQL debug build'],
    ['8.0.36-enterprise-commercial-advanced-log', '8.0.36', 'MySQL Enterprise'],
    ['10.6.16-MariaDB-log', '10.6.16', 'MariaDB'],
    ['5.5.5-10.6.16-MariaDB', '10.6.16', 'MariaDB over the MySQL protocol'],
    ['1.2.3+build.5', '1.2.3', 'semver build metadata'],
    ['1.0.0-rc.1+sha.5114f85', '1.0.0-rc.1', 'semver build metadata after a pre-release'],
    ['v1.2.3+incompatible', '1.2.3', 'Go module +incompatible'],
    ['go1.21.3', '1.21.3', 'Go toolchain'],
    ['go1.20', '1.20.0', 'Go minor release'],
    ['15.2(4)M3', '15.2\\(4\\)m3', 'IOS as reported and as in a CPE'],
    ['3.11.0a1', '3.11.0-alpha1', 'CPython and NVD spellings'],
    ['2.0-beta9', '2.0beta9', 'separators'],
  ];
  it.each(equal)('%s == %s (%s)', (a, b) => {
    expect(compareVersions(a, b)).toBe(0);
    expect(compareVersions(b, a)).toBe(0);
  });

  it('keeps one total preorder with Cisco trains, server suffixes, build metadata and Go prefixes', () => {
    const word = fc.constantFrom('a', 'b', 'm', 'rc', 'beta', 'se', 'sy', 'p', 'log', 'mariadb', 'build', 'deb', 'go', 'v');
    const sep = fc.constantFrom('.', '-', '', '+', '(', ')', ':');
    const part = fc.oneof(fc.nat({ max: 20 }).map(String), word);
    const version = fc
      .tuple(fc.constantFrom('', 'v', 'go', '1:', '5.5.5-'), fc.array(fc.tuple(part, sep), { maxLength: 7 }), fc.constantFrom('', '-log', '+build.5', '-MariaDB-log'))
      .map(([prefix, parts, suffix]) => prefix + parts.map(([p, s]) => p + s).join('') + suffix);
    fc.assert(
      fc.property(version, version, version, (a, b, c) => {
        expect(sign(compareVersions(a, b))).toBe(-sign(compareVersions(b, a)) + 0);
        const ab = compareVersions(a, b);
        const bc = compareVersions(b, c);
        if (ab <= 0 && bc <= 0) expect(compareVersions(a, c)).toBeLessThanOrEqual(0);
        if (ab < 0 && bc <= 0) expect(compareVersions(a, c)).toBeLessThan(0);
        if (ab === 0 && bc === 0) expect(compareVersions(a, c)).toBe(0);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('NVD version and update spellings', () => {
  it.each([
    ['3.11.0a1', '3.11.0', 'a1'],
    ['2.0-beta9', '2.0', 'beta9'],
    ['1.0rc2', '1.0', 'rc2'],
    ['8.0.0-rc.1', '8.0.0', 'rc.1'],
    ['9.0.0.M1', '9.0.0', 'm1'],
    ['8.5p1', '8.5', 'p1'],
    ['v2.0-RC1', '2.0', 'rc1'],
  ])('%s splits into version %s, update %s', (packed, version, update) => {
    expect(splitPackedVersion(packed)).toEqual({ version, update });
  });

  it.each(['1.1.1w', '1.1.1a', '15.2(4)m3', '2.4.57-2', '5.7.44-log', '9.6', '1.8.0_392', '2.4.1-sp1'])('%s is not split', (v) => {
    expect(splitPackedVersion(v)).toBeNull();
  });

  it.each([
    ['a1', 'alpha1', true],
    ['b9', 'beta9', true],
    ['rc.1', 'rc1', true],
    ['RC_2', 'rc2', true],
    ['m3', 'milestone3', true],
    ['p01', 'p1', true],
    ['beta9', 'beta10', false],
    ['alpha1', 'beta1', false],
    ['p1', 'sp1', false],
    ['rc1', 'rc1-rc1', false],
  ])('update %s is %s: %s', (a, b, same) => {
    expect(sameUpdate(a, b)).toBe(same);
    expect(sameUpdate(b, a)).toBe(same);
  });

  it.each([
    ['alpha1', true],
    ['a1', true],
    ['beta9', true],
    ['rc1-rc1', true],
    ['milestone10', true],
    ['p1', false],
    ['sp1', false],
    ['update_392', false],
    ['a', false],
  ])('update %s is a pre-release: %s', (u, pre) => {
    expect(isPreReleaseUpdate(u)).toBe(pre);
  });
});

describe('NVD configurations with real spellings', () => {
  const target = (service: Cpe | string, ...platforms: string[]) => ({ service: typeof service === 'string' ? cpe(service) : service, platforms: platforms.map(cpe) });

  it('CVE-2021-44228 (Log4Shell): 2.0 betas and rcs as NVD splits them, 2.0 itself as 2.0:-', () => {
    const [log4shell] = nvdRecords('nvd-CVE-2021-44228.json');
    const configurations = log4shell?.configurations ?? [];
    const rows: [Cpe, boolean, string][] = [
      [derived('apache', 'log4j', '2.0-beta9'), true, 'listed as 2.0:beta9'],
      [derived('apache', 'log4j', '2.0beta9'), true, 'listed as 2.0:beta9'],
      [derived('apache', 'log4j', '2.0-rc1'), true, 'listed as 2.0:rc1'],
      [derived('apache', 'log4j', '2.0-RC2'), true, 'listed as 2.0:rc2'],
      [derived('apache', 'log4j', '2.0'), true, 'no update reported: 2.0:-'],
      [cpe('cpe:/a:apache:log4j:2.0'), true, 'nmap, no update: 2.0:-'],
      [cpe('cpe:2.3:a:apache:log4j:2.0:-:*:*:*:*:*:*'), true, 'the dictionary name'],
      [cpe('cpe:2.3:a:apache:log4j:2.0:beta9:*:*:*:*:*:*'), true, 'the dictionary name'],
      [derived('apache', 'log4j', '2.0-beta8'), false, 'not listed'],
      [derived('apache', 'log4j', '2.0-alpha1'), false, 'not listed'],
      [cpe('cpe:2.3:a:apache:log4j:2.0:rc3:*:*:*:*:*:*'), false, 'not listed'],
      [derived('apache', 'log4j', '2.0.1'), true, 'range 2.0.1..2.3.1'],
      [derived('apache', 'log4j', '2.3.1'), false, 'fixed'],
      [derived('apache', 'log4j', '2.14.1'), true, 'range 2.13.0..2.15.0'],
      [derived('apache', 'log4j', '2.15.0-rc1'), true, 'a pre-release of the fix is before it'],
      [cpe('cpe:2.3:a:apache:log4j:2.15.0:rc1:*:*:*:*:*:*'), true, 'the same, split as NVD names it'],
      [derived('apache', 'log4j', '2.15.0'), false, 'fixed'],
      [derived('apache', 'log4j', '2.12.2'), false, 'fixed'],
    ];
    for (const [service, expected, why] of rows) expect(matchesConfigurations(configurations, target(service)), `${JSON.stringify(service)}: ${why}`).toBe(expected);
  });

  it('an update NA criteria: met by a version reported without update, not by one with an update', () => {
    const na = { criteria: 'cpe:2.3:a:apache:log4j:2.0:-:*:*:*:*:*:*', vulnerable: true };
    expect(cpeMatchApplies(na, cpe('cpe:/a:apache:log4j:2.0'))).toBe(true);
    expect(cpeMatchApplies(na, cpe('cpe:2.3:a:apache:log4j:2.0:*:*:*:*:*:*:*'))).toBe(true);
    expect(cpeMatchApplies(na, derived('apache', 'log4j', '2.0.0'))).toBe(true);
    expect(cpeMatchApplies(na, derived('apache', 'log4j', '2.0-beta9'))).toBe(false);
    expect(cpeMatchApplies(na, cpe('cpe:2.3:a:apache:log4j:2.0:rc1:*:*:*:*:*:*'))).toBe(false);
    expect(cpeMatchApplies(na, cpe('cpe:/a:apache:log4j'))).toBe(false);
    // And the other way: an update in the criteria is never met by a target that names none.
    expect(cpeMatchApplies({ criteria: 'cpe:2.3:a:apache:log4j:2.0:beta9:*:*:*:*:*:*', vulnerable: true }, cpe('cpe:/a:apache:log4j:2.0'))).toBe(false);
    expect(cpeMatchApplies({ criteria: 'cpe:2.3:a:apache:log4j:2.0:*:*:*:*:*:*:*', vulnerable: true }, derived('apache', 'log4j', '2.0-beta9'))).toBe(true);
  });

  it('CVE-2022-26488: CPython alphas reported packed meet NVD 3.11.0:alphaN', () => {
    const [python] = nvdRecords('nvd-CVE-2022-26488.json');
    const windows = 'cpe:2.3:o:microsoft:windows:-:*:*:*:*:*:*:*';
    const rows: [string, boolean][] = [
      ['3.11.0a1', true],
      ['3.11.0a6', true],
      ['3.11.0alpha3', true],
      ['3.11.0-alpha.4', true],
      ['3.11.0a7', false],
      ['3.11.0b1', false],
      ['3.11.0rc2', false],
      ['3.11.0', false],
      ['3.10.2', true],
      ['3.10.3rc1', false],
      ['3.10.0rc2', false],
    ];
    for (const [v, expected] of rows) expect(matchesConfigurations(python?.configurations ?? [], target(derived('python', 'python', v), windows)), v).toBe(expected);
  });

  it('Cisco IOS trains: exact criteria and ranges as NVD escapes them', () => {
    const cisco = nvdRecords('nvd-constructed-version-spellings.json').find((r) => r.id === 'CVE-0000-0001');
    const configurations = cisco?.configurations ?? [];
    const rows: [string, boolean, string][] = [
      ['cpe:/o:cisco:ios:15.2(4)m3', true, 'nmap CPE, listed'],
      ['cpe:2.3:o:cisco:ios:15.2\\(4\\)m3:*:*:*:*:*:*:*', true, 'formatted string, listed'],
      ['cpe:2.3:o:cisco:ios:15.2\\(4\\)m:*:*:*:*:*:*:*', true, 'range start, included'],
      ['cpe:/o:cisco:ios:15.2(4)m7', true, 'inside 15.2(4)M..M11'],
      ['cpe:/o:cisco:ios:15.2(4)m10', true, 'inside, after M3 (not before it as 1 < 3)'],
      ['cpe:/o:cisco:ios:15.2(4)m11', false, 'range end, excluded'],
      ['cpe:/o:cisco:ios:15.2(5)m', false, 'another build'],
      ['cpe:/o:cisco:ios:12.2(55)se', true, 'listed'],
      ['cpe:/o:cisco:ios:12.2(55)se5', true, 'inside (SE, SE12]'],
      ['cpe:/o:cisco:ios:12.2(55)se12', true, 'range end, included'],
      ['cpe:/o:cisco:ios:12.2(55)se13', false, 'after the range'],
      ['cpe:/o:cisco:ios:12.2(54)se', false, 'before the range'],
      ['cpe:/o:cisco:ios:15.1(2)sy1a', true, 'listed'],
      ['cpe:/o:cisco:ios:15.1(2)sy1', false, 'not listed'],
      ['cpe:/o:cisco:ios:15.1(2)sy', false, 'not listed'],
    ];
    for (const [service, expected, why] of rows) expect(matchesConfigurations(configurations, target(service)), `${service}: ${why}`).toBe(expected);
    // A derived CPE escapes the parentheses and reads back the same; Cisco IOS is an operating
    // system, so a service reported as Cisco IOS without a CPE gets part `o`, as NVD lists it.
    expect(derived('Cisco', 'IOS', '15.2(4)M3').part).toBe('o');
    expect(matchesConfigurations(configurations, target(derived('cisco', 'ios', '15.2(4)M3')))).toBe(true);
    expect(matchesConfigurations(configurations, target(derived('cisco', 'ios', '15.2(4)M11')))).toBe(false);
    // With part `a` (what every derived CPE had) the advisory could never reach it.
    expect(matchesConfigurations(configurations, target({ ...derived('cisco', 'ios', '15.2(4)M3'), part: 'a' }))).toBe(false);
  });

  it('MySQL banners: 5.7.44-log is 5.7.44 (NVD oracle:mysql range example)', () => {
    const mysql = nvdRecords('nvd-constructed-version-spellings.json').find((r) => r.id === 'CVE-0000-0002');
    const configurations = mysql?.configurations ?? [];
    const rows: [string, boolean][] = [
      ['5.5.43-log', true],
      ['5.5.43', true],
      ['5.5.0-debug', true],
      ['5.5.44-log', false],
      ['5.7.44-log', true],
      ['5.7.44', true],
      ['5.7.44-enterprise-commercial-advanced-log', true],
      ['5.7.43-log', false],
      ['5.7.45-log', false],
    ];
    for (const [v, expected] of rows) expect(matchesConfigurations(configurations, target(derived('oracle', 'mysql', v))), v).toBe(expected);
  });
});

describe('OSV SEMVER ranges', () => {
  it.each([
    ['go1.21.3', '1.21.3'],
    ['1.21.3', '1.21.3'],
    ['v1.21.3', '1.21.3'],
    ['1.20', '1.20.0'],
    ['go1.20', '1.20.0'],
    ['go1', '1.0.0'],
    ['go1.21rc2', '1.21.0-rc.2'],
    ['go1.22beta1', '1.22.0-beta.1'],
    ['1.2.3+build.5', '1.2.3'],
    ['9.6p1', null],
    ['1.1.1w', null],
    ['', null],
  ])('toSemver(%j) = %j', (v, expected) => {
    const s = toSemver(v);
    // semver.valid keeps build metadata; it is ignored in comparisons.
    expect(s === null ? null : s.replace(/\+.*/, '')).toBe(expected);
  });

  const record = fixture('osv-GO-2023-2102.json') as { affected: OsvAffected[] };
  const stdlib = record.affected.find((a) => a.package.name === 'stdlib') as OsvAffected;
  it.each([
    ['go1.20.9', true],
    ['go1.20.10', false],
    ['1.20', true],
    ['go1.21rc2', true],
    ['go1.21.0', true],
    ['go1.21.2', true],
    ['go1.21.3', false],
    ['1.21.3+build.5', false],
    ['go1.22.0', false],
    ['go1.19.13', true],
  ])('GO-2023-2102 stdlib: %s affected: %s', (v, expected) => {
    expect(toSemver(v)).not.toBeNull();
    // As matching reads a service's version: the spelling the daemon reported.
    expect(osvAffects(stdlib, v)).toBe(expected);
  });

  it('the same Go ranges read as ECOSYSTEM agree with compareVersions on Go spellings', () => {
    const eco: OsvAffected = { ...stdlib, ranges: stdlib.ranges?.map((r) => ({ ...r, type: 'ECOSYSTEM' })) };
    for (const v of ['go1.20.9', 'go1.20.10', 'go1.21.2', 'go1.21.3', '1.21.3+build.5', 'go1.22.0'])
      expect(osvAffects(eco, v), v).toBe(osvAffects(stdlib, toSemver(v) as string));
  });
});
