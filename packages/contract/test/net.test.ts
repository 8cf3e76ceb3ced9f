import { describe, expect, it } from 'vitest';
import { parseCidr, parseIp } from '../src/net.js';
import { IpAddress } from '../src/inventory.js';

describe('parseIp', () => {
  it.each([
    ['10.0.0.1', true], ['255.255.255.255', true], ['256.0.0.1', false], ['01.2.3.4', false], ['1.2.3', false],
    ['::', true], ['::1', true], ['2001:db8::1', true], ['2001:db8:0:0:0:0:0:1', true], ['::ffff:10.0.0.1', true], ['::10.0.0.1', true],
    ['1:2:3:4:5:6:7::', true], ['::2:3:4:5:6:7:8', true], ['1:2:3:4:5:6:1.2.3.4', true],
    ['1:2:3:4:5:6:7:8:9', false], ['1::2::3', false], ['fe80::1%eth0', false], ['g::1', false], [':10.0.0.1', false],
    // `::` stands for at least one zero group.
    ['1:2:3:4:5:6:7::8', false], ['::1:2:3:4:5:6:7:8', false], ['1:2:3:4:5:6:7:8::', false], ['1:2:3:4:5:6::1.2.3.4', false],
  ])('%s is an address: %s', (s, ok) => {
    expect(parseIp(s) !== null).toBe(ok);
  });

  it('gives the bytes, embedded IPv4 included', () => {
    expect(parseIp('::ffff:10.0.0.1')).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 0, 0, 1]);
    expect(parseIp('10.1.2.3')).toEqual([10, 1, 2, 3]);
  });
});

describe('parseCidr', () => {
  it('tells whether the bits below the prefix are zero', () => {
    expect(parseCidr('10.0.0.0/8')).toMatchObject({ family: 4, prefix: 8, hostBitsZero: true });
    expect(parseCidr('10.0.0.1/8')?.hostBitsZero).toBe(false);
    expect(parseCidr('2001:db8::/32')).toMatchObject({ family: 6, prefix: 32, hostBitsZero: true });
    expect(parseCidr('2001:db8::1/64')?.hostBitsZero).toBe(false);
    expect(parseCidr('::/0')?.hostBitsZero).toBe(true);
    expect(parseCidr('10.1.2.3/32')?.hostBitsZero).toBe(true);
  });

  it.each(['10.0.0.0/33', '::/129', '10.0.0.0', '10.0.0.0/', '2001:db8::/032', '10.0.0.0/08', 'abc/8'])('refuses %s', (s) => {
    expect(parseCidr(s)).toBeNull();
  });
});

describe('IpAddress (the schema every address field uses)', () => {
  it.each([
    ['10.0.0.1', '10.0.0.1'], ['0.0.0.0', '0.0.0.0'], ['255.255.255.255', '255.255.255.255'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'], ['::ffff:10.0.0.1', '::ffff:a00:1'],
  ])('takes %s as %s', (input, canonical) => {
    expect(IpAddress.parse(input)).toBe(canonical);
  });

  it.each(['256.0.0.1', '01.2.3.4', '1.2.3', '1.2.3.4.5', '10.0.0.1 ', ' 10.0.0.1', '1::2::3', ''])('refuses %j with a message naming what was expected', (input) => {
    const r = IpAddress.safeParse(input);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toBe('expected an IPv4 or IPv6 address');
  });
});
