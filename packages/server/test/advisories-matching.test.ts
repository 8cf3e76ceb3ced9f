import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Configuration,
  type Cpe,
  type CpeMatch,
  type OsvAffected,
  compareVersions,
  cpeMatchApplies,
  cpeMatches,
  deriveCpe,
  indexKeys,
  literalText,
  matchesConfigurations,
  osvAffects,
  osvKeysForCpe,
  osvPackageKey,
  parseCpe22,
  parseCpe23,
  productKey,
  toCpe23,
} from '../src/advisories/matching/index.js';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/advisories/${name}`, import.meta.url), 'utf8'));
const nvd = (name: string): { id: string; configurations: Configuration[] } => fixture(name).vulnerabilities[0].cve;
const cpe = (s: string): Cpe => {
  const c = s.startsWith('cpe:/') ? parseCpe22(s) : parseCpe23(s);
  if (!c) throw new Error(`not a CPE: ${s}`);
  return c;
};

describe('compareVersions', () => {
  // [lower, higher]: real versions of real products.
  const ordered: [string, string][] = [
    ['9.6p1', '9.8p1'], // OpenSSH
    ['8.5p1', '9.6p1'],
    ['9.6', '9.6p1'],
    ['8.9p1', '9.0p1'],
    ['7.4p1', '7.9p1'],
    ['9.7p1', '9.8'],
    ['9.6p1', '9.6p2'],
    ['2.4.57', '2.4.58'], // Apache httpd
    ['2.2.34', '2.4.0'],
    ['2.4.9', '2.4.10'],
    ['1.1.1k', '1.1.1w'], // OpenSSL
    ['1.1.1', '1.1.1a'],
    ['1.0.2z', '1.0.2za'],
    ['1.0.2zi', '1.1.0'],
    ['1.1.1w', '3.0.0'],
    ['3.0.0-alpha1', '3.0.0-beta1'],
    ['3.0.0-beta2', '3.0.0'],
    ['1.24.0', '1.25.3'], // nginx
    ['1.9.15', '1.10.0'],
    ['8.0.0-beta', '8.0.0'], // pre-releases
    ['8.0.0-rc1', '8.0.0'],
    ['8.0.0-rc1', '8.0.0-rc2'],
    ['1.0.0-alpha', '1.0.0-beta'],
    ['1.0.0-beta', '1.0.0-rc.1'],
    ['2.0.0-M1', '2.0.0-RC1'], // Maven milestone
    ['6.0.0-SNAPSHOT', '6.0.0-alpha1'],
    ['3.11.0a6', '3.11.0b1'], // CPython
    ['3.11.0rc2', '3.11.0'],
    ['3.10.2', '3.10.3'],
    ['5.7.44', '8.0.36'], // MySQL
    ['8.0.35', '8.0.36'],
    ['10.6.16-MariaDB', '10.11.6-MariaDB'],
    ['10.0.17763.1', '10.0.19041'], // Windows builds
    ['10.0.19041.3693', '10.0.19045.3693'],
    ['6.1.7601', '10.0.14393'],
    ['1.8.0_392', '1.8.0_401'], // Java
    ['1.8.0_401', '11.0.21'],
    ['8u392', '8u401'],
    ['17.0.9', '21.0.1'],
    ['2.4.57', '2.4.57-2'], // Debian revisions
    ['2.4.57-2', '2.4.58-1'],
    ['1:9.2p1-2', '1:9.2p1-2+deb12u3'],
    ['9.9p1', '1:8.0p1'], // an epoch outranks the rest
    ['1.9', '1.10'],
    ['7.88.1', '8.5.0'], // curl
    ['2.0.0-preview1', '2.0.0'],
    ['4.0.0.dev0', '4.0.0a1'],
    ['2019', '2022'], // Microsoft SQL Server, named by year
    ['16.0.4003.1', '16.0.4105.2'],
    ['4.4', '4.4p1'],
    ['9.6p1', '9.6.1'],
    ['2.4.0', '2.4.1-sp1'],
    ['5.0', '5.0-sp1'],
  ];
  it.each(ordered)('%s < %s', (a, b) => {
    expect(compareVersions(a, b)).toBeLessThan(0);
    expect(compareVersions(b, a)).toBeGreaterThan(0);
  });

  const equal: [string, string][] = [
    ['2.4', '2.4.0'],
    ['v1.2', '1.2'],
    ['V1.2.0', '1.2'],
    ['8.0.0-RC1', '8.0.0-rc1'],
    ['1.1.1W', '1.1.1w'],
    ['1.0.0-rc.1', '1.0.0-rc1'],
    ['1.01', '1.1'],
    ['2.0.0.Final', '2.0.0'],
    [' 9.6p1 ', '9.6p1'],
    ['0:2.4.57', '2.4.57'],
  ];
  it.each(equal)('%s == %s', (a, b) => {
    expect(compareVersions(a, b)).toBe(0);
    expect(compareVersions(b, a)).toBe(0);
  });

  it('is antisymmetric and transitive on random versions', () => {
    const word = fc.constantFrom('alpha', 'a', 'beta', 'b', 'rc', 'dev', 'snapshot', 'm', 'p', 'patch', 'sp', 'w', 'z', 'final', 'u');
    const sep = fc.constantFrom('.', '-', '_', '', '+', '~');
    const part = fc.oneof(fc.nat({ max: 30 }).map(String), word);
    const version = fc
      .tuple(fc.constantFrom('', 'v', '1:'), fc.array(fc.tuple(part, sep), { minLength: 0, maxLength: 6 }))
      .map(([prefix, parts]) => prefix + parts.map(([p, s]) => p + s).join(''));
    const sign = (n: number) => Math.sign(n) + 0;
    fc.assert(
      fc.property(version, version, version, (a, b, c) => {
        expect(sign(compareVersions(a, b))).toBe(0 - sign(compareVersions(b, a)) + 0);
        expect(compareVersions(a, a)).toBe(0);
        const ab = compareVersions(a, b);
        const bc = compareVersions(b, c);
        if (ab <= 0 && bc <= 0) expect(compareVersions(a, c)).toBeLessThanOrEqual(0);
        if (ab === 0 && bc === 0) expect(compareVersions(a, c)).toBe(0);
        if (ab < 0 && bc <= 0) expect(compareVersions(a, c)).toBeLessThan(0);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('parseCpe23', () => {
  it('reads the 11 attributes, ANY and NA kept apart from literals', () => {
    expect(parseCpe23('cpe:2.3:a:hp:insight_diagnostics:7.4.0.1570:-:*:*:online:win2003:x64:*')).toEqual({
      part: 'a',
      vendor: 'hp',
      product: 'insight_diagnostics',
      version: '7.4.0.1570',
      update: '-',
      edition: '*',
      language: '*',
      swEdition: 'online',
      targetSw: 'win2003',
      targetHw: 'x64',
      other: '*',
    });
  });

  it('undoes escapes: \\: \\. \\- \\( and keeps \\* \\? \\\\ quoted', () => {
    const c = cpe('cpe:2.3:a:foo\\:bar:baz:1.0:*:*:*:*:*:*:*');
    expect([c.vendor, c.product, c.version]).toEqual(['foo:bar', 'baz', '1.0']);
    expect(cpe('cpe:2.3:a:microsoft:internet_explorer:8\\.0\\.6001:beta:*:*:*:*:*:*').version).toBe('8.0.6001');
    expect(cpe('cpe:2.3:a:hp:openview_network_manager:7\\.51:*:*:*:*:linux:*:*').version).toBe('7.51');
    expect(cpe('cpe:2.3:a:ibm:websphere_application_server:8\\.5\\.5\\.0\\(cf01\\):*:*:*:*:*:*:*').version).toBe('8.5.5.0(cf01)');
    expect(cpe('cpe:2.3:a:foo:bar:1\\*:*:*:*:*:*:*:*').version).toBe('1\\*');
    expect(literalText(cpe('cpe:2.3:a:foo:bar:1\\*:*:*:*:*:*:*:*').version)).toBe('1*');
    expect(cpe('cpe:2.3:a:foo:bar:\\-:*:*:*:*:*:*:*').version).toBe('\\-');
    expect(cpe('cpe:2.3:a:foo:bar:a\\\\b:*:*:*:*:*:*:*').version).toBe('a\\\\b');
  });

  it('lowercases and keeps wildcards at the ends', () => {
    const c = cpe('cpe:2.3:A:Microsoft:Windows_10:10.0.*:*:*:*:*:*:X64:*');
    expect([c.part, c.vendor, c.product, c.version, c.targetHw]).toEqual(['a', 'microsoft', 'windows_10', '10.0.*', 'x64']);
    expect(cpe('cpe:2.3:a:foo:bar:??1.0??:*:*:*:*:*:*:*').version).toBe('??1.0??');
  });

  it.each([
    '',
    'cpe:2.3:a:foo:bar',
    'cpe:2.3:a:foo:bar:1.0:*:*:*:*:*:*',
    'cpe:2.3:a:foo:bar:1.0:*:*:*:*:*:*:*:*',
    'cpe:2.2:a:foo:bar:1.0:*:*:*:*:*:*:*',
    'cpe:/a:foo:bar:1.0',
    'cpe:2.3:x:foo:bar:1.0:*:*:*:*:*:*:*',
    'cpe:2.3:a::bar:1.0:*:*:*:*:*:*:*',
    'cpe:2.3:a:foo:bar:1.0:*:*:*:*:*:*:\\',
    'cpe:2.3:a:foo:bar:1*0:*:*:*:*:*:*:*',
    'cpe:2.3:a:foo:bar:1?0:*:*:*:*:*:*:*',
    'cpe:2.3:a:foo:bar:**:*:*:*:*:*:*:*',
    'cpe:2.3:a:foo bar:baz:1.0:*:*:*:*:*:*:*',
    'cpe:2.3:a:föo:bar:1.0:*:*:*:*:*:*:*',
  ])('%j is malformed', (s) => {
    expect(parseCpe23(s)).toBeNull();
  });

  it('binds back to the same formatted string', () => {
    for (const s of [
      'cpe:2.3:a:hp:insight_diagnostics:7.4.0.1570:-:*:*:online:win2003:x64:*',
      'cpe:2.3:a:foo\\:bar:baz:1.0:*:*:*:*:*:*:*',
      'cpe:2.3:a:ibm:websphere_application_server:8.5.5.0\\(cf01\\):*:*:*:*:*:*:*',
      'cpe:2.3:a:foo:bar:1\\*:*:*:*:*:*:*:*',
      'cpe:2.3:a:foo:bar:\\-:*:*:*:*:*:*:*',
      'cpe:2.3:o:microsoft:windows_10:10.0.*:*:*:*:*:*:x64:*',
      'cpe:2.3:a:openbsd:openssh:8.5:p1:*:*:*:*:*:*',
    ])
      expect(toCpe23(cpe(s))).toBe(s);
    // Needless escapes are dropped: \. is just a dot.
    expect(toCpe23(cpe('cpe:2.3:a:microsoft:internet_explorer:8\\.0\\.6001:beta:*:*:*:*:*:*'))).toBe('cpe:2.3:a:microsoft:internet_explorer:8.0.6001:beta:*:*:*:*:*:*');
  });
});

describe('parseCpe22', () => {
  it('reads what nmap reports', () => {
    expect(toCpe23(cpe('cpe:/a:openbsd:openssh:8.9p1'))).toBe('cpe:2.3:a:openbsd:openssh:8.9p1:*:*:*:*:*:*:*');
    expect(toCpe23(cpe('cpe:/o:linux:linux_kernel'))).toBe('cpe:2.3:o:linux:linux_kernel:*:*:*:*:*:*:*:*');
    expect(toCpe23(cpe('cpe:/a:apache:http_server:2.4.57'))).toBe('cpe:2.3:a:apache:http_server:2.4.57:*:*:*:*:*:*:*');
    expect(toCpe23(cpe('cpe:/o:microsoft:windows_server_2008:r2:sp1'))).toBe('cpe:2.3:o:microsoft:windows_server_2008:r2:sp1:*:*:*:*:*:*');
    expect(toCpe23(cpe('cpe:/a:igor_sysoev:nginx:1.18.0'))).toBe('cpe:2.3:a:igor_sysoev:nginx:1.18.0:*:*:*:*:*:*:*');
    expect(toCpe23(cpe('cpe:/h:cisco:ios'))).toBe('cpe:2.3:h:cisco:ios:*:*:*:*:*:*:*:*');
  });

  it('decodes %xx, NA, empty components and the packed ~ edition', () => {
    expect(cpe('cpe:/a:foo%3abar:baz:1.0').vendor).toBe('foo:bar');
    expect(cpe('cpe:/a:Microsoft:Internet_Explorer:8.%02').version).toBe('8.*');
    expect(cpe('cpe:/a:foo:bar:%2a').version).toBe('\\*');
    expect(cpe('cpe:/a::bar:-').vendor).toBe('*');
    expect(cpe('cpe:/a::bar:-').version).toBe('-');
    expect(toCpe23(cpe('cpe:/a:hp:insight_diagnostics:7.4.0.1570:-:~~online~win2003~x64~'))).toBe(
      'cpe:2.3:a:hp:insight_diagnostics:7.4.0.1570:-:*:*:online:win2003:x64:*',
    );
    expect(toCpe23(cpe('cpe:/a:microsoft:office:2010:sp1:~~~~x64~:en-us'))).toBe('cpe:2.3:a:microsoft:office:2010:sp1:*:en-us:*:*:x64:*');
  });

  it.each(['', 'cpe:a:foo:bar', 'cpe:2.3:a:foo:bar:1.0:*:*:*:*:*:*:*', 'cpe:/x:foo', 'cpe:/-:foo', 'cpe:/a:foo:bar:1.0:u:e:en:extra', 'cpe:/a:foo:bar:1%zz', 'cpe:/a:foo:bar:1.0:-:~a~b', 'cpe:/a:foo bar'])(
    '%j is malformed',
    (s) => expect(parseCpe22(s)).toBeNull(),
  );
});

describe('cpeMatches (NISTIR 7696)', () => {
  const cases: [string, string, boolean][] = [
    // ANY in the source is a superset of anything; a literal in the source is a subset of ANY in the target.
    ['cpe:2.3:a:openbsd:openssh:*:*:*:*:*:*:*:*', 'cpe:2.3:a:openbsd:openssh:8.9p1:*:*:*:*:*:*:*', true],
    ['cpe:2.3:a:openbsd:openssh:8.5:p1:*:*:*:*:*:*', 'cpe:2.3:a:openbsd:openssh:8.5:*:*:*:*:*:*:*', false],
    ['cpe:2.3:a:openbsd:openssh:8.5:p1:*:*:*:*:*:*', 'cpe:2.3:a:openbsd:openssh:8.5:p1:*:*:*:*:*:*', true],
    // NA only equals NA.
    ['cpe:2.3:a:openbsd:openssh:9.8:-:*:*:*:*:*:*', 'cpe:2.3:a:openbsd:openssh:9.8:p1:*:*:*:*:*:*', false],
    ['cpe:2.3:a:openbsd:openssh:9.8:-:*:*:*:*:*:*', 'cpe:2.3:a:openbsd:openssh:9.8:-:*:*:*:*:*:*', true],
    ['cpe:2.3:o:microsoft:windows:-:*:*:*:*:*:*:*', 'cpe:2.3:o:microsoft:windows:-:*:*:*:*:*:*:*', true],
    ['cpe:2.3:o:microsoft:windows:-:*:*:*:*:*:*:*', 'cpe:2.3:o:microsoft:windows:10:*:*:*:*:*:*:*', false],
    // NISTIR 7696 examples: wildcards in the source.
    ['cpe:2.3:a:microsoft:internet_explorer:8.*:sp?:*:*:*:*:*:*', 'cpe:2.3:a:microsoft:internet_explorer:8.0.6001:sp1:*:*:*:*:*:*', true],
    ['cpe:2.3:a:microsoft:internet_explorer:8.*:sp?:*:*:*:*:*:*', 'cpe:2.3:a:microsoft:internet_explorer:8.0.6001:sp12:*:*:*:*:*:*', false],
    ['cpe:2.3:a:microsoft:internet_explorer:8.*:sp?:*:*:*:*:*:*', 'cpe:2.3:a:microsoft:internet_explorer:9.0:sp1:*:*:*:*:*:*', false],
    ['cpe:2.3:a:microsoft:internet_explorer:8.*:sp?:*:*:*:*:*:*', 'cpe:2.3:a:microsoft:internet_explorer:8.0.6001:sp:*:*:*:*:*:*', true],
    ['cpe:2.3:a:foo:bar:*1.0:*:*:*:*:*:*:*', 'cpe:2.3:a:foo:bar:11.0:*:*:*:*:*:*:*', true],
    ['cpe:2.3:a:foo:bar:??1.0:*:*:*:*:*:*:*', 'cpe:2.3:a:foo:bar:221.0:*:*:*:*:*:*:*', true],
    ['cpe:2.3:a:foo:bar:??1.0:*:*:*:*:*:*:*', 'cpe:2.3:a:foo:bar:3321.0:*:*:*:*:*:*:*', false],
    // A quoted * is a literal star, not a wildcard.
    ['cpe:2.3:a:foo:bar:1\\*:*:*:*:*:*:*:*', 'cpe:2.3:a:foo:bar:12:*:*:*:*:*:*:*', false],
    ['cpe:2.3:a:foo:bar:1\\*:*:*:*:*:*:*:*', 'cpe:2.3:a:foo:bar:1\\*:*:*:*:*:*:*:*', true],
    // A target holding wildcards is UNDEFINED against a literal source.
    ['cpe:2.3:a:foo:bar:1.0:*:*:*:*:*:*:*', 'cpe:2.3:a:foo:bar:1.*:*:*:*:*:*:*:*', false],
    // Every attribute counts: target_sw.
    ['cpe:2.3:a:zoom:meetings:*:*:*:*:*:macos:*:*', 'cpe:2.3:a:zoom:meetings:5.10.0:*:*:*:*:windows:*:*', false],
    ['cpe:2.3:a:zoom:meetings:*:*:*:*:*:macos:*:*', 'cpe:2.3:a:zoom:meetings:5.10.0:*:*:*:*:macos:*:*', true],
    ['cpe:2.3:a:foo\\:bar:baz:1.0:*:*:*:*:*:*:*', 'cpe:2.3:a:foo\\:bar:baz:1.0:*:*:*:*:*:*:*', true],
    ['cpe:2.3:a:foo\\:bar:baz:1.0:*:*:*:*:*:*:*', 'cpe:2.3:a:foo:bar:1.0:*:*:*:*:*:*:*', false],
  ];
  it.each(cases)('%s matches %s: %s', (criterion, target, expected) => {
    expect(cpeMatches(cpe(criterion), cpe(target))).toBe(expected);
  });
});

describe('productKey and deriveCpe', () => {
  it('indexes literal vendor and product only', () => {
    expect(productKey(cpe('cpe:2.3:a:OpenBSD:OpenSSH:*:*:*:*:*:*:*:*'))).toBe('a:openbsd:openssh');
    expect(productKey(cpe('cpe:/a:openbsd:openssh:8.9p1'))).toBe('a:openbsd:openssh');
    expect(productKey(cpe('cpe:2.3:a:foo\\:bar:baz:1.0:*:*:*:*:*:*:*'))).toBe('a:foo\\:bar:baz');
    expect(productKey(cpe('cpe:2.3:a:*:openssh:*:*:*:*:*:*:*:*'))).toBeNull();
    expect(productKey(cpe('cpe:2.3:a:openbsd:-:*:*:*:*:*:*:*:*'))).toBeNull();
    expect(productKey(cpe('cpe:2.3:a:openbsd:open*:*:*:*:*:*:*:*:*'))).toBeNull();
    expect(productKey(cpe('cpe:2.3:*:openbsd:openssh:*:*:*:*:*:*:*:*'))).toBeNull();
  });

  it('derives a CPE from vendor, product and version', () => {
    expect(deriveCpe('OpenBSD', 'OpenSSH', '9.6p1')).toBe('cpe:2.3:a:openbsd:openssh:9.6p1:*:*:*:*:*:*:*');
    expect(deriveCpe(' Apache Software Foundation ', 'HTTP  Server', '2.4.57')).toBe('cpe:2.3:a:apache_software_foundation:http_server:2.4.57:*:*:*:*:*:*:*');
    expect(deriveCpe('foo:corp', 'bar*', '1.0 (build 7)')).toBe('cpe:2.3:a:foo\\:corp:bar\\*:1.0_\\(build_7\\):*:*:*:*:*:*:*');
    expect(deriveCpe('x', 'y', '-')).toBe('cpe:2.3:a:x:y:\\-:*:*:*:*:*:*:*');
    expect(deriveCpe('', 'openssh', '9.6')).toBeNull();
    // Network operating systems and firmware get NVD's part (o), applications stay a.
    expect(deriveCpe('Juniper', 'Junos', '21.4R3')).toBe('cpe:2.3:o:juniper:junos:21.4r3:*:*:*:*:*:*:*');
    expect(deriveCpe('Microsoft', 'Windows Server 2019', '10.0.17763')).toMatch(/^cpe:2\.3:o:microsoft:windows_server_2019:/);
    expect(deriveCpe('Zyxel', 'NAS326 firmware', '5.21')).toMatch(/^cpe:2\.3:o:zyxel:nas326_firmware:/);
    expect(deriveCpe('Cisco', 'Webex', '43.1')).toMatch(/^cpe:2\.3:a:cisco:webex:/);
    expect(deriveCpe('openbsd', '  ', '9.6')).toBeNull();
    expect(deriveCpe('openbsd', 'openssh', '')).toBeNull();
    const c = cpe(deriveCpe('foo:corp', 'bar*', '1.0 (build 7)') as string);
    expect([c.vendor, literalText(c.product), c.version]).toEqual(['foo:corp', 'bar*', '1.0_(build_7)']);
  });
});

describe('NVD configurations', () => {
  const target = (service: string, ...platforms: string[]) => ({ service: cpe(service), platforms: platforms.map(cpe) });

  it('CVE-2024-6387 (regreSSHion): < 4.4, 8.5p1, 8.6 up to 9.8', () => {
    const { configurations } = nvd('nvd-CVE-2024-6387.json');
    const affected = (s: string) => matchesConfigurations(configurations, target(s));
    // nmap's and derived CPEs pack the portable patch into the version; NVD splits it into update.
    expect(affected('cpe:/a:openbsd:openssh:8.5p1')).toBe(true);
    expect(affected('cpe:/a:openbsd:openssh:9.6p1')).toBe(true);
    expect(affected('cpe:/a:openbsd:openssh:8.9p1')).toBe(true);
    expect(affected('cpe:/a:openbsd:openssh:9.7')).toBe(true);
    expect(affected('cpe:/a:openbsd:openssh:4.3p2')).toBe(true);
    expect(affected('cpe:/a:openbsd:openssh:9.8p1')).toBe(false);
    expect(affected('cpe:/a:openbsd:openssh:8.4p1')).toBe(false);
    expect(affected('cpe:/a:openbsd:openssh:4.4p1')).toBe(false);
    expect(affected('cpe:/a:openbsd:openssh:7.4p1')).toBe(false);
    expect(affected('cpe:/a:openbsd:openssh:10.0p2')).toBe(false);
    // The split form, as NVD writes it.
    expect(affected('cpe:2.3:a:openbsd:openssh:8.5:p1:*:*:*:*:*:*')).toBe(true);
    expect(affected('cpe:2.3:a:openbsd:openssh:9.6:p1:*:*:*:*:*:*')).toBe(true);
    expect(affected('cpe:2.3:a:openbsd:openssh:9.8:p1:*:*:*:*:*:*')).toBe(false);
    expect(affected('cpe:2.3:a:openbsd:openssh:9.8:-:*:*:*:*:*:*')).toBe(true); // as NVD lists it
    // A service with no version says nothing about a range.
    expect(affected('cpe:/a:openbsd:openssh')).toBe(false);
    expect(affected(deriveCpe('OpenBSD', 'OpenSSH', '9.6p1') as string)).toBe(true);
    // Other products of the record.
    expect(affected('cpe:2.3:o:debian:debian_linux:12.0:*:*:*:*:*:*:*')).toBe(true);
    expect(affected('cpe:2.3:o:freebsd:freebsd:14.0:p3:*:*:*:*:*:*')).toBe(true);
    expect(affected('cpe:2.3:a:netapp:e-series_santricity_os_controller:11.70.2:*:*:*:*:*:*:*')).toBe(true);
    expect(affected('cpe:2.3:a:netapp:e-series_santricity_os_controller:11.80:*:*:*:*:*:*:*')).toBe(false);
    expect(affected('cpe:/a:apache:http_server:2.4.57')).toBe(false);
  });

  it('CVE-2016-20012: versionEndIncluding 8.7 includes 8.7 (and 8.7p1), not 8.8', () => {
    const { configurations } = nvd('nvd-CVE-2016-20012.json');
    const affected = (s: string) => matchesConfigurations(configurations, target(s));
    expect(configurations[0]?.nodes[0]?.cpeMatch[0]?.versionEndIncluding).toBe('8.7');
    expect(affected('cpe:2.3:a:openbsd:openssh:8.7:*:*:*:*:*:*:*')).toBe(true);
    expect(affected('cpe:/a:openbsd:openssh:8.7p1')).toBe(true);
    expect(affected('cpe:/a:openbsd:openssh:7.4p1')).toBe(true);
    expect(affected('cpe:/a:openbsd:openssh:8.7.1')).toBe(false);
    expect(affected('cpe:/a:openbsd:openssh:8.8p1')).toBe(false);
    expect(affected('cpe:/a:openbsd:openssh:9.6p1')).toBe(false);
  });

  it('CVE-2022-26488: Python AND running on Windows, matched only with the platform present', () => {
    const { configurations } = nvd('nvd-CVE-2022-26488.json');
    const windows = 'cpe:2.3:o:microsoft:windows:-:*:*:*:*:*:*:*';
    const linux = 'cpe:/o:linux:linux_kernel:5.15';
    const affected = (service: string, ...platforms: string[]) => matchesConfigurations(configurations, target(service, ...platforms));
    expect(affected('cpe:/a:python:python:3.9.10', windows)).toBe(true);
    expect(affected('cpe:/a:python:python:3.9.10')).toBe(false);
    expect(affected('cpe:/a:python:python:3.9.10', linux)).toBe(false);
    expect(affected('cpe:/a:python:python:3.9.10', linux, windows)).toBe(true);
    expect(affected('cpe:/a:python:python:3.7.12', windows)).toBe(true);
    expect(affected('cpe:/a:python:python:3.10.2', windows)).toBe(true); // the versionEndIncluding boundary
    expect(affected('cpe:/a:python:python:3.10.3', windows)).toBe(false);
    expect(affected('cpe:/a:python:python:3.9.11', windows)).toBe(false);
    expect(affected('cpe:2.3:a:python:python:3.11.0:alpha3:*:*:*:*:*:*', windows)).toBe(true);
    expect(affected('cpe:2.3:a:python:python:3.11.0:beta1:*:*:*:*:*:*', windows)).toBe(false);
    // The platform alone is not the service being vulnerable.
    expect(affected(windows, windows)).toBe(false);
    expect(affected(windows)).toBe(false);
  });

  it('negate, AND nodes and malformed criteria', () => {
    const vuln = (criteria: string, range: Partial<CpeMatch> = {}): CpeMatch => ({ criteria, vulnerable: true, ...range });
    const platform = (criteria: string): CpeMatch => ({ criteria, vulnerable: false });
    const service = cpe('cpe:/a:vendor:app:2.0');
    const linux = cpe('cpe:2.3:o:linux:linux_kernel:-:*:*:*:*:*:*:*');
    // "app, but not on Linux".
    const notOnLinux: Configuration[] = [
      { operator: 'AND', nodes: [{ operator: 'OR', cpeMatch: [vuln('cpe:2.3:a:vendor:app:*:*:*:*:*:*:*:*')] }, { operator: 'OR', negate: true, cpeMatch: [platform('cpe:2.3:o:linux:linux_kernel:-:*:*:*:*:*:*:*')] }] },
    ];
    expect(matchesConfigurations(notOnLinux, { service, platforms: [] })).toBe(true);
    expect(matchesConfigurations(notOnLinux, { service, platforms: [linux] })).toBe(false);
    // A node with operator AND inside.
    const andNode: Configuration[] = [{ nodes: [{ operator: 'AND', cpeMatch: [vuln('cpe:2.3:a:vendor:app:*:*:*:*:*:*:*:*', { versionStartExcluding: '1.0' }), platform('cpe:2.3:o:linux:linux_kernel:-:*:*:*:*:*:*:*')] }] }];
    expect(matchesConfigurations(andNode, { service, platforms: [linux] })).toBe(true);
    expect(matchesConfigurations(andNode, { service: cpe('cpe:/a:vendor:app:1.0'), platforms: [linux] })).toBe(false);
    expect(matchesConfigurations(andNode, { service, platforms: [] })).toBe(false);
    // A configuration negated as a whole says nothing without a vulnerable criteria applying.
    expect(matchesConfigurations([{ negate: true, nodes: [{ operator: 'OR', cpeMatch: [vuln('cpe:2.3:a:other:thing:*:*:*:*:*:*:*:*')] }] }], { service, platforms: [] })).toBe(false);
    expect(cpeMatchApplies(vuln('not a cpe'), service)).toBe(false);
    expect(matchesConfigurations([], { service, platforms: [] })).toBe(false);
  });

  it('indexKeys: the vulnerable products only', () => {
    expect(indexKeys(nvd('nvd-CVE-2022-26488.json').configurations)).toEqual([
      'a:netapp:active_iq_unified_manager',
      'a:netapp:ontap_select_deploy_administration_utility',
      'a:python:python',
    ]);
    const keys = indexKeys(nvd('nvd-CVE-2024-6387.json').configurations);
    expect(keys).toContain('a:openbsd:openssh');
    expect(keys).toContain('o:freebsd:freebsd');
    expect(new Set(keys).size).toBe(keys.length);
    expect(indexKeys([{ nodes: [{ operator: 'OR', cpeMatch: [{ criteria: 'cpe:2.3:a:*:*:*:*:*:*:*:*:*:*', vulnerable: true }] }] }])).toEqual([]);
  });

  it('cpeMatchApplies agrees with a naive range check on dotted numeric versions', () => {
    const dotted = fc.array(fc.nat({ max: 12 }), { minLength: 1, maxLength: 4 });
    const naive = (a: number[], b: number[]) => {
      const n = Math.max(a.length, b.length);
      for (let i = 0; i < n; i++) {
        const d = (a[i] ?? 0) - (b[i] ?? 0);
        if (d !== 0) return d;
      }
      return 0;
    };
    const bound = fc.option(fc.tuple(fc.boolean(), dotted), { nil: undefined });
    fc.assert(
      fc.property(dotted, bound, bound, (version, start, end) => {
        const m: CpeMatch = { criteria: 'cpe:2.3:a:vendor:product:*:*:*:*:*:*:*:*', vulnerable: true };
        if (start) m[start[0] ? 'versionStartIncluding' : 'versionStartExcluding'] = start[1].join('.');
        if (end) m[end[0] ? 'versionEndIncluding' : 'versionEndExcluding'] = end[1].join('.');
        let expected = true;
        if (start) expected &&= start[0] ? naive(version, start[1]) >= 0 : naive(version, start[1]) > 0;
        if (end) expected &&= end[0] ? naive(version, end[1]) <= 0 : naive(version, end[1]) < 0;
        const t = cpe(`cpe:2.3:a:vendor:product:${version.join('.')}:*:*:*:*:*:*:*`);
        expect(cpeMatchApplies(m, t)).toBe(expected);
        // Another product never applies; a version ANY never satisfies a range.
        expect(cpeMatchApplies(m, cpe(`cpe:2.3:a:vendor:other:${version.join('.')}:*:*:*:*:*:*:*`))).toBe(false);
        if (start || end) expect(cpeMatchApplies(m, cpe('cpe:2.3:a:vendor:product:*:*:*:*:*:*:*:*'))).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('OSV', () => {
  const advisory = fixture('osv-GHSA-c2qf-rxjj-qqgw.json') as { aliases: string[]; affected: OsvAffected[] };
  const affected = (v: string) => advisory.affected.some((a) => osvAffects(a, v));

  it('GHSA-c2qf-rxjj-qqgw (semver ReDoS, CVE-2022-25883)', () => {
    expect(advisory.aliases).toEqual(['CVE-2022-25883']);
    expect(affected('7.5.1')).toBe(true);
    expect(affected('7.5.2')).toBe(false);
    expect(affected('7.0.0')).toBe(true);
    expect(affected('6.3.0')).toBe(true);
    expect(affected('6.3.1')).toBe(false);
    expect(affected('5.7.1')).toBe(true);
    expect(affected('5.7.2')).toBe(false);
    expect(affected('0.1.0')).toBe(true);
    expect(affected('v7.5.1')).toBe(true);
    expect(affected('7.6.0')).toBe(false);
    expect(affected('not a version')).toBe(false);
  });

  it('the same ranges as ECOSYSTEM (as GitHub writes them) agree', () => {
    for (const a of advisory.affected) {
      const eco: OsvAffected = { ...a, ranges: a.ranges?.map((r) => ({ ...r, type: 'ECOSYSTEM' })) };
      for (const v of ['0.0.1', '5.7.1', '5.7.2', '6.0.0', '6.3.0', '6.3.1', '7.5.1', '7.5.2', '7.6.0'])
        expect(osvAffects(eco, v), `${v} in ${JSON.stringify(eco.ranges)}`).toBe(osvAffects(a, v));
    }
  });

  it('versions lists, last_affected, limit, several introduced, GIT ignored', () => {
    const pkg = { ecosystem: 'PyPI', name: 'Django' };
    expect(osvAffects({ package: pkg, versions: ['4.2.1', '4.2.2'] }, '4.2.2')).toBe(true);
    expect(osvAffects({ package: pkg, versions: ['4.2.1', '4.2.2'] }, '4.2.3')).toBe(false);
    const lastAffected: OsvAffected = { package: pkg, ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '4.0' }, { last_affected: '4.2.7' }] }] };
    expect(osvAffects(lastAffected, '4.2.7')).toBe(true);
    expect(osvAffects(lastAffected, '4.2.8')).toBe(false);
    expect(osvAffects(lastAffected, '3.2.20')).toBe(false);
    expect(osvAffects(lastAffected, '4.0rc1')).toBe(false);
    // Events out of order, two introduced/fixed pairs in one range.
    const twice: OsvAffected = { package: pkg, ranges: [{ type: 'ECOSYSTEM', events: [{ fixed: '4.2.8' }, { introduced: '4.2' }, { fixed: '3.2.23' }, { introduced: '0' }] }] };
    expect(osvAffects(twice, '3.2.22')).toBe(true);
    expect(osvAffects(twice, '3.2.23')).toBe(false);
    expect(osvAffects(twice, '4.1.13')).toBe(false);
    expect(osvAffects(twice, '4.2.7')).toBe(true);
    expect(osvAffects(twice, '5.0')).toBe(false);
    const limited: OsvAffected = { package: pkg, ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { limit: '2.0.0' }] }] };
    expect(osvAffects(limited, '1.9.9')).toBe(true);
    expect(osvAffects(limited, '2.0.0')).toBe(false);
    const git: OsvAffected = { package: pkg, ranges: [{ type: 'GIT', events: [{ introduced: '0' }, { fixed: 'a1b2c3d4' }] }] };
    expect(osvAffects(git, '1.0.0')).toBe(false);
  });

  it('package keys and the CPE to OSV table', () => {
    expect(osvPackageKey('npm', 'Semver')).toBe('osv:npm:semver');
    expect(osvPackageKey('PyPI', 'Jinja2')).toBe('osv:pypi:jinja2');
    expect(osvPackageKey('PyPI', 'zope.interface')).toBe('osv:pypi:zope-interface');
    expect(osvKeysForCpe(cpe('cpe:2.3:a:npmjs:npm:*:*:*:*:*:*:*:*'))).toEqual(['osv:npm:npm']);
    expect(osvKeysForCpe(cpe('cpe:2.3:a:npmjs:semver:7.5.1:*:*:*:*:node.js:*:*'))).toEqual(['osv:npm:semver']);
    expect(osvKeysForCpe(cpe('cpe:2.3:a:node-fetch_project:node-fetch:*:*:*:*:*:node.js:*:*'))).toEqual(['osv:npm:node-fetch']);
    expect(osvKeysForCpe(cpe('cpe:2.3:a:palletsprojects:jinja:*:*:*:*:*:python:*:*'))).toEqual(['osv:pypi:jinja']);
    expect(osvKeysForCpe(cpe('cpe:2.3:a:golang:go:1.21.0:*:*:*:*:*:*:*'))).toEqual(['osv:go:stdlib']);
    expect(osvKeysForCpe(cpe('cpe:2.3:a:golang:net:*:*:*:*:*:*:*:*'))).toEqual(['osv:go:net']);
    expect(osvKeysForCpe(cpe('cpe:2.3:a:rust-lang:regex:*:*:*:*:*:rust:*:*'))).toEqual(['osv:crates.io:regex']);
    expect(osvKeysForCpe(cpe('cpe:2.3:a:rack_project:rack:*:*:*:*:*:ruby:*:*'))).toEqual(['osv:rubygems:rack']);
    expect(osvKeysForCpe(cpe('cpe:2.3:a:foo:bar_baz:*:*:*:*:*:ruby:*:*'))).toEqual(['osv:rubygems:bar_baz', 'osv:rubygems:bar-baz']);
    expect(osvKeysForCpe(cpe('cpe:2.3:a:laravel:framework:*:*:*:*:*:php:*:*'))).toEqual([]);
    expect(osvKeysForCpe(cpe('cpe:/a:openbsd:openssh:9.6p1'))).toEqual([]);
    expect(osvKeysForCpe(cpe('cpe:2.3:o:golang:go:*:*:*:*:*:*:*:*'))).toEqual([]);
  });
});
