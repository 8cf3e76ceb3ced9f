import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveTools } from '../../../test/system-tools.js';
import { advisoryApplies, matchOrganisation } from '../src/advisories/match.service.js';
import { recordsOf } from '../src/advisories/records.js';
import { type DistroAdvisory, type OsvAffected, parseCpe23, compareApk, compareDpkg, compareRpm, distroBuildOf, distroVerdict, ecosystemFamily, rpmvercmp } from '../src/advisories/matching/index.js';

import { type TestApp, bearer, buildTestApp, login, seedOrg } from './helpers.js';
import { type Json, type Scanning, ingest, scanningSession } from './scanning.js';

// Backport-aware matching (issue 29): the distributions' version orders, the builds banners name,
// and what a distribution's record says of a build.

const sign = (n: number) => Math.sign(n);

describe.skipIf(!haveTools("the dpkg version order checked against dpkg's own", ['dpkg']))('compareDpkg agrees with dpkg itself', () => {
  const real = [
    '1:9.2p1-2+deb12u3', '1:9.2p1-2+deb12u2', '1:9.2p1-2', '9.2p1-2+deb12u3', '1:8.9p1-3ubuntu0.10', '1:8.9p1-3ubuntu0.6', '1:8.9p1-3', '1:8.4p1-5+deb11u3',
    '8.0.36-0ubuntu0.22.04.1', '8.0.36-0ubuntu0.20.04.1', '8.0.35-0ubuntu0.22.04.1', '1:10.11.6-0+deb12u1', '1:10.11.4-1~deb12u1', '3.0.11-1~deb12u2', '3.0.11-1',
    '2.36-9+deb12u4', '2.36-9+deb12u10', '6.1.0-0~bpo11+1', '6.1.0-1', '1.0~rc1', '1.0', '1.0+b1', '1.0-1~', '1.0-1', '2:1.0', '0:1.0', '1.0.0', '1.0a', '1.0~~', '1.0~~a',
  ];
  const pairs: [string, string][] = real.flatMap((a) => real.map((b) => [a, b] as [string, string]));
  const part = fc.stringMatching(/^[0-9][0-9A-Za-z.+~]{0,7}$/);
  const version = fc.tuple(fc.option(fc.nat({ max: 3 }), { nil: undefined }), part, fc.option(fc.stringMatching(/^[0-9A-Za-z.+~]{1,6}$/), { nil: undefined })).map(([e, u, r]) => `${e === undefined ? '' : `${e}:`}${u}${r === undefined ? '' : `-${r}`}`);
  pairs.push(...fc.sample(fc.tuple(version, version), { numRuns: 300, seed: 29 }));

  it(`orders ${pairs.length} pairs as \`dpkg --compare-versions\` does`, () => {
    // One shell for all pairs: dpkg answers by exit status.
    const script = 'while read a b; do if dpkg --compare-versions "$a" lt "$b"; then echo -1; elif dpkg --compare-versions "$a" eq "$b"; then echo 0; else echo 1; fi; done';
    const input = `${pairs.map(([a, b]) => `${a} ${b}`).join('\n')}\n`;
    const expected = execFileSync('sh', ['-c', script], { input, encoding: 'utf8' }).trim().split('\n').map(Number);
    const got = pairs.map(([a, b]) => sign(compareDpkg(a, b)));
    const differ = pairs.flatMap(([a, b], i) => (got[i] !== expected[i] ? [`${a} ? ${b}: dpkg ${expected[i]}, ours ${got[i]}`] : []));
    expect(differ).toEqual([]);
    expect(expected.length).toBe(pairs.length);
  });
});

describe.skipIf(!haveTools("the rpm version order checked against rpm's own", ['rpm']))('compareRpm agrees with rpm itself', () => {
  const real = [
    '8.7p1-38.el9_4.1', '8.7p1-38.el9', '8.7p1-34.el9_3.3', '8.7p1-30.el9_2', '8.0p1-19.el8_9.2', '8.0p1-19.el8_8', '1:1.31.4-1.el9_3', '1.31.4-1.el9_3',
    '2.4.37-62.module+el8.9.0+19699+7a7a2044', '2.4.37-56.module+el8.8.0+18758+b3a9c8da', '0.10.4-5.38.el9_4.1', '1.0~rc1-1', '1.0-1', '1.0^git1-1', '1.0a-1', '1.01-1', '1.1-1',
  ];
  const pairs: [string, string][] = real.flatMap((a) => real.map((b) => [a, b] as [string, string]));
  const seg = fc.stringMatching(/^[0-9a-z][0-9a-z.~^_+]{0,7}$/);
  const evr = fc.tuple(fc.option(fc.nat({ max: 2 }), { nil: undefined }), seg, seg).map(([e, v, r]) => `${e === undefined ? '' : `${e}:`}${v}-${r}`);
  pairs.push(...fc.sample(fc.tuple(evr, evr), { numRuns: 300, seed: 29 }));

  it(`orders ${pairs.length} epoch:version-release pairs as rpm's rpm.vercmp does`, () => {
    // One rpm process for all pairs (its Lua interpreter), one answer a line.
    const lua = pairs.map(([a, b]) => `print(rpm.vercmp(${JSON.stringify(a)}, ${JSON.stringify(b)}) .. ",")`).join(' ');
    const expected = execFileSync('rpm', ['--eval', `%{lua: ${lua}}`], { encoding: 'utf8' }).trim().split(',').slice(0, -1).map(Number);
    const got = pairs.map(([a, b]) => sign(compareRpm(a, b)));
    const differ = pairs.flatMap(([a, b], i) => (got[i] !== expected[i] ? [`${a} ? ${b}: rpm ${expected[i]}, ours ${got[i]}`] : []));
    expect(differ).toEqual([]);
    expect(expected.length).toBe(pairs.length);
  });
});

describe('compareRpm and compareApk', () => {
  it.each([
    ['1.0', '1.0', 0], ['1.0', '2.0', -1], ['2.0.1', '2.0', 1], ['2.0.1a', '2.0.1', 1], ['5.5p1', '5.5p10', -1], ['10xyz', '10.1xyz', -1],
    ['xyz10', 'xyz10.1', -1], ['1.0', '1.0a', -1], ['1.0a', '1.0', 1], ['1.0~rc1', '1.0', -1], ['1.0~rc1', '1.0~rc2', -1], ['1.0^', '1.0', 1], ['1.0^git1', '1.0.1', -1],
    ['a', '1', -1], ['1', 'a', 1], ['001', '1', 0], ['1.01', '1.1', 0], ['8.7p1', '8.7', 1],
  ] as const)('rpmvercmp(%s, %s) = %d', (a, b, want) => expect(sign(rpmvercmp(a, b))).toBe(want));

  it('compares epoch, version and release, a missing release before any', () => {
    expect(sign(compareRpm('8.7p1-38.el9_4.1', '8.7p1-38.el9'))).toBe(1);
    expect(sign(compareRpm('0:8.7p1-38.el9', '8.7p1-38.el9'))).toBe(0);
    expect(sign(compareRpm('1:2.4.6-1.el7', '2.4.37-62.el8'))).toBe(1);
    expect(sign(compareRpm('2.4.37', '2.4.37-62.el8'))).toBe(-1);
  });

  it.each([
    ['9.6_p1-r0', '9.6_p1-r1', -1], ['1.2_rc1', '1.2', -1], ['1.2', '1.2_p1', -1], ['1.2', '1.2.1', -1], ['1.2a', '1.2b', -1], ['1.2', '1.2a', -1],
    ['1.2_alpha', '1.2_beta', -1], ['1.2_pre1', '1.2_rc1', -1], ['3.0.12-r0', '3.0.12-r0', 0], ['1.10', '1.9', 1], ['2.36-r1', '2.36.1-r0', -1],
  ] as const)('compareApk(%s, %s) = %d', (a, b, want) => expect(sign(compareApk(a, b))).toBe(want));
});

describe('the distribution build a banner names', () => {
  it.each([
    [{ product: 'OpenSSH', version: '9.2p1 Debian 2+deb12u3', evidence: 'protocol 2.0' }, { family: 'debian', release: '12', packages: ['openssh'], version: '9.2p1-2+deb12u3' }],
    [{ product: 'OpenSSH', version: '9.2p1', evidence: 'SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3' }, { family: 'debian', release: '12', packages: ['openssh'], version: '9.2p1-2+deb12u3' }],
    [{ product: 'OpenSSH', version: '8.4p1 Debian 5+deb11u3', evidence: null }, { family: 'debian', release: '11', version: '8.4p1-5+deb11u3' }],
    [{ product: 'OpenSSH', version: '9.2p1 Debian 2', evidence: null }, { family: 'debian', release: null, version: '9.2p1-2' }],
    [{ product: 'OpenSSH', version: '8.9p1 Ubuntu 3ubuntu0.10', evidence: 'Ubuntu Linux; protocol 2.0' }, { family: 'ubuntu', release: null, version: '8.9p1-3ubuntu0.10' }],
    [{ product: 'MySQL', version: '8.0.36-0ubuntu0.22.04.1', evidence: null }, { family: 'ubuntu', release: '22.04', packages: ['mysql-8.0', 'mysql-dfsg-8.0'], version: '8.0.36-0ubuntu0.22.04.1' }],
    [{ product: 'MySQL', version: '5.5.5-10.11.6-MariaDB-0+deb12u1', evidence: null }, { family: 'debian', release: '12', packages: ['mariadb', 'mariadb-10.11'], version: '10.11.6-0+deb12u1' }],
    [{ product: 'MariaDB', version: '5.5.5-10.6.16-MariaDB-0ubuntu0.22.04.1', evidence: null }, { family: 'ubuntu', release: '22.04', version: '10.6.16-0ubuntu0.22.04.1' }],
    [{ product: 'Apache httpd', version: '2.4.37', evidence: '(Red Hat Enterprise Linux)' }, { family: 'redhat', packages: ['httpd'], version: null }],
    [{ product: 'Apache httpd', version: '2.4.6', evidence: '(CentOS)' }, { family: 'redhat', packages: ['httpd'], version: null }],
  ])('%j', (facts, want) => expect(distroBuildOf(facts)).toMatchObject(want));

  it.each([
    { product: 'OpenSSH', version: '9.6p1', evidence: 'SSH-2.0-OpenSSH_9.6' }, // upstream, no marker
    { product: 'MariaDB', version: '10.11.6-MariaDB-1:10.11.6+maria~deb12', evidence: null }, // the MariaDB Foundation's build, not Debian's
    { product: 'OpenSSH', version: '9.2p1 Raspbian 2+deb12u3', evidence: null },
    { product: 'nginx', version: '1.22.1', evidence: null },
  ])('none in %j', (facts) => expect(distroBuildOf(facts)).toBeNull());

  it('reads the family and release of OSV ecosystems', () => {
    expect(ecosystemFamily('Debian:12')).toEqual({ family: 'debian', release: '12' });
    expect(ecosystemFamily('Ubuntu:22.04:LTS')).toEqual({ family: 'ubuntu', release: '22.04' });
    expect(ecosystemFamily('Ubuntu:Pro:18.04:LTS')).toEqual({ family: 'ubuntu', release: '18.04' });
    expect(ecosystemFamily('Alpine:v3.19')).toEqual({ family: 'alpine', release: '3.19' });
    expect(ecosystemFamily('Red Hat:enterprise_linux:9::appstream')).toEqual({ family: 'redhat', release: '9' });
    expect(ecosystemFamily('AlmaLinux:9')).toEqual({ family: 'redhat', release: '9' });
    expect(ecosystemFamily('Rocky Linux:8')).toEqual({ family: 'redhat', release: '8' });
    expect(ecosystemFamily('npm')).toBeNull();
  });
});

describe('distroVerdict', () => {
  const debian = (id: string, cves: string[], eco: string, fixed: string | null, versions?: string[]): DistroAdvisory => ({
    id, cveId: cves[0]!, aliases: cves,
    affected: [{ package: { ecosystem: eco, name: 'openssh' }, ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '0' }, ...(fixed ? [{ fixed }] : [])] }], ...(versions ? { versions } : {}) }],
  });
  const build = (version: string, release: string | null, family: 'debian' | 'ubuntu' = 'debian') => ({ family, release, packages: ['openssh'], version, marker: version });
  const dsa = debian('DSA-5724-1', ['CVE-2024-6387'], 'Debian:12', '1:9.2p1-2+deb12u3');

  it('fixed when the build is at or past the fix, the epoch taken from the record', () => {
    expect(distroVerdict(build('9.2p1-2+deb12u3', '12'), 'CVE-2024-6387', [dsa])).toMatchObject({ verdict: 'fixed', fixedIn: '1:9.2p1-2+deb12u3', advisoryId: 'DSA-5724-1', version: '1:9.2p1-2+deb12u3', ecosystem: 'Debian:12', distribution: 'Debian 12' });
    expect(distroVerdict(build('9.2p1-2+deb12u7', '12'), 'CVE-2024-6387', [dsa])).toMatchObject({ verdict: 'fixed' });
  });
  it('affected before the fix, with the version to install', () => {
    expect(distroVerdict(build('9.2p1-2+deb12u2', '12'), 'CVE-2024-6387', [dsa])).toMatchObject({ verdict: 'affected', fixedIn: '1:9.2p1-2+deb12u3' });
  });
  it('unknown for another CVE, another release, no record, or no version', () => {
    expect(distroVerdict(build('9.2p1-2+deb12u3', '12'), 'CVE-2023-48795', [dsa]).verdict).toBe('unknown');
    expect(distroVerdict(build('8.4p1-5+deb11u3', '11'), 'CVE-2024-6387', [dsa]).verdict).toBe('unknown');
    expect(distroVerdict(build('9.2p1-2+deb12u3', '12'), 'CVE-2024-6387', []).verdict).toBe('unknown');
    expect(distroVerdict({ family: 'redhat', release: null, packages: ['httpd'], version: null, marker: '(CentOS)' }, 'CVE-2024-6387', [dsa]).verdict).toBe('unknown');
  });
  it('a release not in the banner is found by the upstream version its records name', () => {
    expect(distroVerdict(build('9.2p1-2', null), 'CVE-2024-6387', [dsa])).toMatchObject({ verdict: 'affected', distribution: 'Debian 12' });
    const usn = debian('USN-6859-1', ['CVE-2024-6387'], 'Ubuntu:22.04:LTS', '1:8.9p1-3ubuntu0.10');
    const noble = debian('USN-6859-1', ['CVE-2024-6387'], 'Ubuntu:24.04:LTS', '1:9.6p1-3ubuntu13.3');
    expect(distroVerdict(build('8.9p1-3ubuntu0.10', null, 'ubuntu'), 'CVE-2024-6387', [usn, noble])).toMatchObject({ verdict: 'fixed', distribution: 'Ubuntu 22.04' });
    expect(distroVerdict(build('8.9p1-3ubuntu0.6', null, 'ubuntu'), 'CVE-2024-6387', [usn, noble])).toMatchObject({ verdict: 'affected' });
    // 9.6p1 builds are judged by 24.04's record only (22.04's names 8.9p1).
    expect(distroVerdict(build('9.6p1-3ubuntu13.3', null, 'ubuntu'), 'CVE-2024-6387', [usn, noble])).toMatchObject({ verdict: 'fixed', distribution: 'Ubuntu 24.04' });
  });
  it('affected wins over fixed, and an unfixed record keeps it affected', () => {
    const tracker = debian('DEBIAN-CVE-2024-6387', ['CVE-2024-6387'], 'Debian:12', null);
    expect(distroVerdict(build('9.2p1-2+deb12u3', '12'), 'CVE-2024-6387', [dsa, tracker]).verdict).toBe('affected');
    const listed = debian('DEBIAN-CVE-2024-0001', ['CVE-2024-0001'], 'Debian:12', '1:9.2p1-2+deb12u5', ['1:9.2p1-2+deb12u3']);
    expect(distroVerdict(build('9.2p1-2+deb12u3', '12'), 'CVE-2024-0001', [listed]).verdict).toBe('affected');
  });
  it('prefers a named advisory over the tracker record as evidence', () => {
    const tracker = debian('DEBIAN-CVE-2024-6387', ['CVE-2024-6387'], 'Debian:12', '1:9.2p1-2+deb12u3');
    expect(distroVerdict(build('9.2p1-2+deb12u3', '12'), 'CVE-2024-6387', [tracker, dsa]).advisoryId).toBe('DSA-5724-1');
  });
});

// ------------------------------------------------------------------------------------------
// End to end: real NVD and distribution records imported, services observed through the daemon
// API with the banners nmap and the core signatures report, the matcher run.

const distroFixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/advisories/distro/${name}`, import.meta.url), 'utf8'));
const advisoryFixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/advisories/${name}`, import.meta.url), 'utf8'));

describe('distroVerdict on the real records of each family', () => {
  const adv = (file: string): DistroAdvisory => {
    const r = recordsOf(distroFixture(file)).records[0]!;
    return { id: r.id, cveId: r.cveId, aliases: r.aliases, affected: r.affected as OsvAffected[] };
  };
  const at = (family: 'debian' | 'ubuntu' | 'redhat' | 'alpine', release: string, pkg: string, version: string) => ({ family, release, packages: [pkg], version, marker: version });

  it('Debian (DLA-3022-1, dpkg in Debian 9, CVE-2022-1664)', () => {
    const dla = adv('osv-DLA-3022-1.json');
    expect(dla.cveId).toBe('CVE-2022-1664');
    expect(distroVerdict(at('debian', '9', 'dpkg', '1.18.25'), 'CVE-2022-1664', [dla])).toMatchObject({ verdict: 'affected', fixedIn: '1.18.26', ecosystem: 'Debian:9', advisoryId: 'DLA-3022-1' });
    expect(distroVerdict(at('debian', '9', 'dpkg', '1.18.26'), 'CVE-2022-1664', [dla])).toMatchObject({ verdict: 'fixed', fixedIn: '1.18.26' });
    expect(distroVerdict(at('debian', '10', 'dpkg', '1.18.26'), 'CVE-2022-1664', [dla]).verdict).toBe('unknown');
  });
  it('AlmaLinux (ALSA-2024:4312, openssh in AlmaLinux 9, CVE-2024-6387), in rpm\'s order', () => {
    const alsa = adv('osv-ALSA-2024-4312.json');
    expect(alsa).toMatchObject({ id: 'ALSA-2024:4312', cveId: 'CVE-2024-6387' });
    expect(distroVerdict(at('redhat', '9', 'openssh', '8.7p1-38.el9'), 'CVE-2024-6387', [alsa])).toMatchObject({ verdict: 'affected', fixedIn: '8.7p1-38.el9_4.1', distribution: 'Red Hat Enterprise Linux 9' });
    expect(distroVerdict(at('redhat', '9', 'openssh', '8.7p1-38.el9_4.1'), 'CVE-2024-6387', [alsa])).toMatchObject({ verdict: 'fixed', advisoryId: 'ALSA-2024:4312' });
    expect(distroVerdict(at('redhat', '9', 'openssh', '8.7p1-38.el9_4.3'), 'CVE-2024-6387', [alsa]).verdict).toBe('fixed');
  });
  it('Alpine (ALPINE-CVE-2025-26519, musl, one fix per release), in apk\'s order', () => {
    const alpine = adv('osv-ALPINE-CVE-2025-26519.json');
    expect(alpine.cveId).toBe('CVE-2025-26519');
    expect(distroVerdict(at('alpine', '3.19', 'musl', '1.2.4_git20230717-r4'), 'CVE-2025-26519', [alpine])).toMatchObject({ verdict: 'affected', fixedIn: '1.2.4_git20230717-r5' });
    expect(distroVerdict(at('alpine', '3.19', 'musl', '1.2.4_git20230717-r5'), 'CVE-2025-26519', [alpine]).verdict).toBe('fixed');
    expect(distroVerdict(at('alpine', '3.21', 'musl', '1.2.5-r8'), 'CVE-2025-26519', [alpine])).toMatchObject({ verdict: 'affected', fixedIn: '1.2.5-r9' });
    expect(distroVerdict(at('alpine', '3.21', 'musl', '1.2.5-r9'), 'CVE-2025-26519', [alpine]).verdict).toBe('fixed');
  });
});

describe('backport-aware matching, end to end', () => {
  let t: TestApp;
  let admin: { cookie: string; csrfToken: string };

  const importDoc = async (doc: unknown) => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/admin/advisories/import', headers: { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken }, payload: doc as Json });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const findings = async (s: Scanning) => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/vulnerabilities?limit=500', headers: bearer(s.api) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as Json[];
  };
  const match = (s: Scanning) => matchOrganisation(t.database.db, s.org.organisationId).then((r) => r.value);
  /** The organisation's changes so far an hour back (see advisories.test.ts: a run reads changes from the oldest open transaction on). */
  const settle = (s: Scanning) => sql`update change_log set at = at - interval '1 hour' where organisation_id = ${s.org.organisationId}`.execute(t.database.db);

  /** One host per service, observed on tcp/22. */
  async function observed(services: Json[], cidr: string) {
    const { s, sessionId } = await scanningSession(t, cidr);
    const base = cidr.replace(/0\/24$/, '');
    const hosts = services.map((_, i) => ({ fingerprint: `fp-${i}` }));
    const ips = services.map((_, i) => ({ hostFingerprint: `fp-${i}`, address: `${base}${i + 10}` }));
    await ingest(t, s.daemon, { sessionId, hosts, ips, services: services.map((x, i) => ({ fingerprint: `fp-${i}`, address: `${base}${i + 10}`, protocol: 'tcp', port: 22, name: 'ssh', ...x })) });
    return { s, sessionId, base };
  }
  const byAddress = async (s: Scanning, base: string) => {
    const services = (await t.app.inject({ method: 'GET', url: '/api/v1/services?limit=500', headers: bearer(s.api) })).json().data as Json[];
    const fs = await findings(s);
    return (i: number, cve: string) => {
      const svc = services.find((x) => x.address === `${base}${i + 10}`);
      return fs.find((f) => f.serviceId === svc?.id && f.cveId === cve);
    };
  };

  beforeAll(async () => {
    t = await buildTestApp();
    const org = await seedOrg(t.database);
    admin = await login(t.app, org.ownerEmail);
    // Upstream: NVD's records of regreSSHion and the ssh-agent flaw.
    await importDoc(advisoryFixture('nvd-CVE-2024-6387.json'));
    await importDoc(distroFixture('nvd-CVE-2023-38408.json'));
  });
  afterAll(() => t.close());

  const nmapUbuntu = (revision: string) => ({ product: 'OpenSSH', version: `8.9p1 Ubuntu ${revision}`, cpe: 'cpe:/a:openbsd:openssh:8.9p1', evidence: 'Ubuntu Linux; protocol 2.0' });
  const coreBanner = (banner: string, version: string) => ({ product: 'OpenSSH', vendor: 'OpenBSD', version, cpe: `cpe:2.3:a:openbsd:openssh:${version}:*:*:*:*:*:*:*`, evidence: banner, signatureSource: 'core', signatureId: 'core:ssh-openssh' });

  it('a distribution record imported after the upstream match resolves the fixed builds, with its evidence, and leaves the vulnerable ones open', async () => {
    const { s, base } = await observed(
      [
        nmapUbuntu('3ubuntu0.10'), // Ubuntu 22.04 with the fix for both CVEs
        coreBanner('SSH-2.0-OpenSSH_8.9p1 Ubuntu-3', '8.9p1'), // 22.04 as released: vulnerable to both
        nmapUbuntu('3ubuntu0.6'), // fixed for CVE-2023-38408 (0.3), not for CVE-2024-6387 (0.10)
        coreBanner('SSH-2.0-OpenSSH_8.7', '8.7'), // AlmaLinux 9: the banner names no distribution
        coreBanner('SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3', '9.2p1'), // Debian 12: no Debian record imported
      ],
      '10.31.0.0/24',
    );
    // Upstream only: every build the CPE ranges cover is open.
    await match(s);
    let at = await byAddress(s, base);
    for (const i of [0, 1, 2]) for (const cve of ['CVE-2024-6387', 'CVE-2023-38408']) expect(at(i, cve), `${i} ${cve}`).toMatchObject({ state: 'open' });
    expect(at(0, 'CVE-2024-6387')!.distribution).toMatchObject({ verdict: 'unknown', distribution: 'Ubuntu', package: 'openssh', version: '8.9p1-3ubuntu0.10' });
    expect(at(3, 'CVE-2024-6387')).toMatchObject({ state: 'open', distribution: null });
    expect(at(4, 'CVE-2024-6387')).toMatchObject({ state: 'open', distribution: { verdict: 'unknown', distribution: 'Debian 12' } });
    await settle(s);

    // Ubuntu's records: USN and the tracker's per-CVE records, as Ubuntu publishes them.
    for (const f of ['osv-USN-6859-1.json', 'osv-UBUNTU-CVE-2024-6387.json', 'osv-USN-6242-1.json', 'osv-UBUNTU-CVE-2023-38408.json', 'osv-ALSA-2024-4312.json']) await importDoc(distroFixture(f));
    const second = await match(s);
    expect(second.full).toBe(false);
    at = await byAddress(s, base);
    expect(at(0, 'CVE-2024-6387')).toMatchObject({
      state: 'resolved',
      distribution: { verdict: 'fixed', distribution: 'Ubuntu 22.04', ecosystem: 'Ubuntu:22.04:LTS', package: 'openssh', version: '1:8.9p1-3ubuntu0.10', fixedIn: '1:8.9p1-3ubuntu0.10', advisoryId: 'USN-6859-1' },
    });
    expect(at(0, 'CVE-2024-6387')!.resolvedAt).not.toBeNull();
    expect(at(0, 'CVE-2023-38408')).toMatchObject({ state: 'resolved', distribution: { verdict: 'fixed', fixedIn: '1:8.9p1-3ubuntu0.3', advisoryId: 'USN-6242-1' } });
    expect(at(1, 'CVE-2024-6387')).toMatchObject({ state: 'open', distribution: { verdict: 'affected', version: '1:8.9p1-3', fixedIn: '1:8.9p1-3ubuntu0.10' } });
    expect(at(1, 'CVE-2023-38408')).toMatchObject({ state: 'open', distribution: { verdict: 'affected', fixedIn: '1:8.9p1-3ubuntu0.3' } });
    expect(at(2, 'CVE-2024-6387')).toMatchObject({ state: 'open', distribution: { verdict: 'affected' } });
    expect(at(2, 'CVE-2023-38408')).toMatchObject({ state: 'resolved', distribution: { verdict: 'fixed' } });
    expect(at(3, 'CVE-2024-6387')).toMatchObject({ state: 'open', distribution: null });
    expect(at(4, 'CVE-2024-6387')).toMatchObject({ state: 'open', distribution: { verdict: 'unknown' } });
    // The audit says the matcher resolved them.
    const audit = await t.database.db.selectFrom('audit_log').select('changes').where('organisation_id', '=', s.org.organisationId).where('target_id', '=', at(0, 'CVE-2024-6387')!.id).orderBy('occurred_at').execute();
    expect(audit.map((a) => a.changes)).toEqual([{ state: { from: null, to: 'open' }, job: 'cve.match' }, { state: { from: 'open', to: 'resolved' }, job: 'cve.match' }]);
    // The findings page shows the same evidence.
    const page = await t.app.inject({ method: 'GET', url: '/api/v1/findings?state=resolved', headers: bearer(s.api) });
    expect(page.statusCode, page.body).toBe(200);
    expect(page.json().data).toContainEqual(expect.objectContaining({ cveId: 'CVE-2024-6387', state: 'resolved', distribution: expect.objectContaining({ verdict: 'fixed', advisoryId: 'USN-6859-1' }) }));
  });

  it('a rescan that reports the fixed build resolves the finding; a build seen fixed at first is recorded resolved, never announced', async () => {
    const { s, sessionId, base } = await observed([coreBanner('SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.6', '8.9p1')], '10.32.0.0/24');
    await match(s);
    let at = await byAddress(s, base);
    expect(at(0, 'CVE-2024-6387')).toMatchObject({ state: 'open', distribution: { verdict: 'affected' } });
    await settle(s);
    // The package was upgraded: the same port now says 3ubuntu0.10.
    await ingest(t, s.daemon, { sessionId, services: [{ fingerprint: 'fp-0', address: `${base}10`, protocol: 'tcp', port: 22, name: 'ssh', ...coreBanner('SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.10', '8.9p1') }] });
    await match(s);
    at = await byAddress(s, base);
    expect(at(0, 'CVE-2024-6387')).toMatchObject({ state: 'resolved', distribution: { verdict: 'fixed', advisoryId: 'USN-6859-1' } });

    const fresh = await observed([coreBanner('SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.10', '8.9p1')], '10.33.0.0/24');
    const counts = await match(fresh.s);
    expect(counts.opened).toBe(0);
    const first = await byAddress(fresh.s, fresh.base);
    expect(first(0, 'CVE-2024-6387')).toMatchObject({ state: 'resolved', distribution: { verdict: 'fixed' } });
    const announced = await sql<{ n: number }>`select count(*)::int as n from events where organisation_id = ${fresh.s.org.organisationId} and kind = 'vulnerability.opened'`.execute(t.database.db);
    expect(announced.rows[0]!.n).toBe(0);
  });
});

// ------------------------------------------------------------------------------------------
// Measured on real records (docs/benchmarks.md, "Backport-aware matching"): every openssh build
// Ubuntu's own records name for its LTS releases (the `versions` they list and the versions that
// fix them), each as the banner that build sends (`SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.10`,
// the form of the real banners in fixtures/advisories/distro/banners.json), matched against NVD's
// records of CVE-2024-6387 and CVE-2023-38408. The truth of each (build, CVE) is the record's own
// entry for the build's release, ordered by dpkg itself: fixed when `dpkg --compare-versions
// build ge fix`. The matcher sees only the banner (no release).

describe.skipIf(!haveTools('backport-aware matching measured against dpkg', ['dpkg']))('backport-aware matching measured on real Ubuntu records', () => {
  const nvdOf = (doc: unknown) => recordsOf(doc).records[0]!;
  const upstream = [nvdOf(advisoryFixture('nvd-CVE-2024-6387.json')), nvdOf(distroFixture('nvd-CVE-2023-38408.json'))];
  const distro = ['osv-USN-6859-1.json', 'osv-UBUNTU-CVE-2024-6387.json', 'osv-USN-6242-1.json', 'osv-UBUNTU-CVE-2023-38408.json', 'osv-USN-6560-1.json'].map((f) => recordsOf(distroFixture(f)).records[0]!);
  const advisories: DistroAdvisory[] = distro.map((r) => ({ id: r.id, cveId: r.cveId, aliases: r.aliases, affected: r.affected as OsvAffected[] }));

  // Every openssh build of a (non-FIPS) Ubuntu release named by the records, with the release it belongs to.
  const builds = new Map<string, string>();
  for (const r of distro)
    for (const a of r.affected as OsvAffected[]) {
      if (a.package.name !== 'openssh' || /fips/i.test(a.package.ecosystem)) continue;
      for (const v of [...(a.versions ?? []), ...(a.ranges ?? []).flatMap((x) => x.events.flatMap((e) => (e.fixed ? [e.fixed] : [])))]) builds.set(v, a.package.ecosystem);
    }
  const dpkgGe = (a: string, b: string) => {
    try {
      execFileSync('dpkg', ['--compare-versions', a, 'ge', b]);
      return true;
    } catch {
      return false;
    }
  };

  it('removes the false positives of fixed builds and loses no true finding', () => {
    const rows = [...builds].flatMap(([version, ecosystem]) => {
      const m = /^1:([\w.]+)-(\S+)$/.exec(version)!;
      const banner = `SSH-2.0-OpenSSH_${m[1]} Ubuntu-${m[2]}`;
      const facts = { product: 'OpenSSH', version: m[1]!, evidence: banner };
      const cpe = parseCpe23(`cpe:2.3:a:openbsd:openssh:${m[1]}:*:*:*:*:*:*:*`)!;
      const build = distroBuildOf(facts)!;
      return upstream.flatMap((u) => {
        if (!advisoryApplies(u, cpe, [])) return [];
        // The truth: the entry of the build's release in the records of this CVE.
        const entries = distro.filter((r) => r.cveId === u.cveId || r.aliases.includes(u.cveId)).flatMap((r) => (r.affected as OsvAffected[]).filter((a) => a.package.name === 'openssh' && a.package.ecosystem === ecosystem));
        const fixes = entries.flatMap((a) => (a.ranges ?? []).flatMap((x) => x.events.flatMap((e) => (e.fixed ? [e.fixed] : []))));
        const truth = fixes.length > 0 && fixes.every((f) => dpkgGe(version, f)) ? 'fixed' : entries.length > 0 ? 'vulnerable' : 'no record';
        return [{ banner, cve: u.cveId, truth, verdict: distroVerdict(build, u.cveId, advisories).verdict }];
      });
    });
    const count = (f: (r: (typeof rows)[number]) => boolean) => rows.filter(f).length;
    const report = {
      builds: builds.size,
      upstreamFindings: rows.length,
      fixedBuilds: count((r) => r.truth === 'fixed'),
      resolvedByBackport: count((r) => r.verdict === 'fixed'),
      falsePositivesLeft: count((r) => r.truth === 'fixed' && r.verdict !== 'fixed'),
      trueFindingsLost: count((r) => r.truth !== 'fixed' && r.verdict === 'fixed'),
      keptOpenAffected: count((r) => r.verdict === 'affected'),
      keptOpenUnknown: count((r) => r.verdict === 'unknown'),
    };
    expect(report.trueFindingsLost, JSON.stringify(rows.filter((r) => r.truth !== 'fixed' && r.verdict === 'fixed'))).toBe(0);
    expect(report.falsePositivesLeft, JSON.stringify(rows.filter((r) => r.truth === 'fixed' && r.verdict !== 'fixed'))).toBe(0);
    // The figures docs/benchmarks.md quotes.
    expect(report).toEqual({ builds: 93, upstreamFindings: 106, fixedBuilds: 14, resolvedByBackport: 14, falsePositivesLeft: 0, trueFindingsLost: 0, keptOpenAffected: 91, keptOpenUnknown: 1 });
    mkdirSync(new URL('../../../test-output/', import.meta.url), { recursive: true });
    writeFileSync(new URL('../../../test-output/backports.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  });

  it('reads every real distribution banner of the fixtures into its family, and no upstream banner', () => {
    const banners = distroFixture('banners.json') as { banner: string; source: string; form: string }[];
    const ssh = banners.filter((b) => /OpenSSH_/.test(b.banner));
    const families = ssh.map((b) => {
      const version = /OpenSSH_([\w.]+)/.exec(b.banner)![1]!;
      return { banner: b.banner, build: distroBuildOf({ product: 'OpenSSH', version, evidence: b.banner }) };
    });
    for (const { banner, build } of families) {
      const named = /(Debian|Ubuntu)-/.exec(banner)?.[1];
      if (named) expect(build?.family, banner).toBe(named.toLowerCase());
      else expect(build, banner).toBeNull();
    }
    expect(families.filter((f) => f.build).length).toBeGreaterThan(30);
  });

  it('reads the MySQL and MariaDB builds of Debian and Ubuntu, and leaves the MariaDB Foundation\'s own builds alone', () => {
    const banners = (distroFixture('banners.json') as { banner: string; form: string }[]).filter((b) => b.form.startsWith('mysql'));
    const read = banners.map((b) => ({ banner: b.banner, build: distroBuildOf({ product: /MariaDB/.test(b.banner) ? 'MariaDB' : 'MySQL', version: b.banner, evidence: null }) }));
    for (const { banner, build } of read) {
      // Built by MariaDB's own repositories (`1~jessie`, `+maria~`, `ubu2204`, `mariadb1~`), not the distribution's.
      if (/MariaDB-(?:\d+~|[\d:.]*\+maria~|ubu\d|mariadb\d)/.test(banner)) expect(build, banner).toBeNull();
      else if (/^\d[\d.]*-(?:\d[\w.~]*ubuntu|[\d.]+-MariaDB-\d*ubuntu)/.test(banner.replace(/^5\.5\.5-/, ''))) expect(build?.family, banner).toBe('ubuntu');
      else if (/\+deb\d+u\d+/.test(banner)) expect(build?.family, banner).toBe('debian');
    }
    const ubuntu = read.filter((r) => r.build?.family === 'ubuntu');
    expect(ubuntu.find((r) => r.banner === '5.5.28-0ubuntu0.12.04.3-log')?.build).toMatchObject({ release: '12.04', packages: ['mysql-5.5', 'mysql-dfsg-5.5'], version: '5.5.28-0ubuntu0.12.04.3' });
    expect(read.find((r) => r.banner === '5.5.62-0+deb8u1')?.build).toMatchObject({ family: 'debian', release: '8', version: '5.5.62-0+deb8u1' });
    expect(read.find((r) => r.banner === '5.5.5-10.1.23-MariaDB-9+deb9u1')?.build).toMatchObject({ family: 'debian', release: '9', packages: ['mariadb', 'mariadb-10.1'], version: '10.1.23-9+deb9u1' });
    expect(read.find((r) => r.banner === '5.5.5-10.0.31-MariaDB-0ubuntu0.16.04.2')?.build).toMatchObject({ family: 'ubuntu', release: '16.04', version: '10.0.31-0ubuntu0.16.04.2' });
    // 18 of the 112: the rest are the MariaDB Foundation's builds, Debian releases before 6 (`+lenny2`, `Debian_7etch6`) and versions such as `5.0.51a`.
    expect(ubuntu.length + read.filter((r) => r.build?.family === 'debian').length).toBe(18);
  });
});
