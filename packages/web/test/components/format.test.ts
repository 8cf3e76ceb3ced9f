import { describe, expect, it } from 'vitest';
import { ago, bytes, countOf, cpeLabel, daysLeft, duration, every, plural, product, seconds } from '../../src/lib/format';

// The console's short texts for times, sizes and counts, at their boundaries.

const now = Date.parse('2026-03-10T12:00:00Z');
const before = (ms: number) => new Date(now - ms).toISOString();

describe('format', () => {
  it('ago: seconds, minutes, hours and days, "just now" for a clock ahead, a dash for nothing', () => {
    expect([0, 59_000, 60_000, 3_599_000, 3_600_000, 86_399_000, 86_400_000, 30 * 86_400_000].map((ms) => ago(before(ms), now))).toEqual([
      '0 s ago', '59 s ago', '1 min ago', '59 min ago', '1 h ago', '23 h ago', '1 d ago', '30 d ago',
    ]);
    expect(ago(before(-5_000), now)).toBe('just now');
    expect(ago(null, now)).toBe('—');
    expect(ago(undefined, now)).toBe('—');
  });

  it('seconds: the two largest units, the smaller left out when zero, negatives as 0', () => {
    expect([0, 45, 60, 719, 3600, 3660, 11_100, 86_400, 187_200, -3].map(seconds)).toEqual([
      '0 s', '45 s', '1 min', '11 min', '1 h', '1 h 1 min', '3 h 5 min', '1 d', '2 d 4 h', '0 s',
    ]);
  });

  it('duration and every', () => {
    expect([null, 999, 1000, 59_949, 60_000, 125_400].map(duration)).toEqual(['—', '999 ms', '1.0 s', '59.9 s', '1 min 0 s', '2 min 5 s']);
    expect([30, 300, 3600, 86_400, 90].map(every)).toEqual(['30 s', '5 min', '1 h', '1 d', '90 s']);
  });

  it('daysLeft: whole days, negative once passed', () => {
    expect(daysLeft('2026-03-20T12:00:00Z', now)).toBe(10);
    expect(daysLeft('2026-03-11T11:59:59Z', now)).toBe(0);
    expect(daysLeft('2026-03-10T11:00:00Z', now)).toBe(-1);
  });

  it('bytes, plural, countOf and cpeLabel', () => {
    // One unit everywhere (the server's SVG too): binary, IEC.
    expect([null, 0, 1023, 1024, 3_500_000, 7.5 * 2 ** 30, 3 * 2 ** 40].map(bytes)).toEqual(['—', '0 B', '1023 B', '1.0 KiB', '3.3 MiB', '7.5 GiB', '3.0 TiB']);
    expect([plural(1, 'host'), plural(2, 'host'), plural(0, 'daemon'), plural(2, 'match', 'matches')]).toEqual(['1 host', '2 hosts', '0 daemons', '2 matches']);
    expect([countOf(undefined), countOf({ data: [1, 2], hasMore: false }), countOf({ data: [1, 2], hasMore: true })]).toEqual(['…', '2', '2+']);
    // The vendor is not repeated before the product.
    expect(cpeLabel('cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*')).toBe('openssh 9.2p1');
    expect(cpeLabel('cpe:2.3:a:f5:nginx:*:*:*:*:*:*:*:*')).toBe('nginx');
    expect(cpeLabel('not-a-cpe')).toBe('not-a-cpe');
    expect(cpeLabel(null)).toBe('—');
  });

  it('product: the product and version, never the vendor before it', () => {
    expect(product({ vendor: 'openbsd', product: 'OpenSSH', version: '9.2p1' })).toBe('OpenSSH 9.2p1');
    expect(product({ vendor: 'Apache', product: 'Apache httpd', version: '2.4.58' })).toBe('Apache httpd 2.4.58');
    expect(product({ vendor: 'Apache', product: 'Apache httpd 2.4.58', version: '2.4.58' })).toBe('Apache httpd 2.4.58');
    expect(product({ vendor: 'f5', product: 'nginx', version: null })).toBe('nginx');
    expect(product({ vendor: 'f5', product: null, version: null })).toBe('—');
  });
});
