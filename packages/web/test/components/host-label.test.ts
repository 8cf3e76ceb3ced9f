import { describe, expect, it } from 'vitest';
import { byHostLabel, hostLabel } from '../../src/components/hostLabel';
import type { Host } from '../../src/lib/types';

const host = (id: string, over: Partial<Host>): Host =>
  ({ id, siteId: null, hostname: null, fqdn: null, addresses: [], macs: [], vendor: null, os: null, deviceType: null, parentHostId: null, openPortCount: 0, firstSeenAt: '', lastSeenAt: '', goneAt: null, createdAt: '', updatedAt: '', ...over }) as Host;

describe('host labels', () => {
  it('names a host by hostname, FQDN, first address, else the start of its id', () => {
    expect(hostLabel(host('0190f0e4-aaaa', { hostname: 'db', fqdn: 'db.example', addresses: ['10.0.0.1'] }))).toBe('db');
    expect(hostLabel(host('0190f0e4-aaaa', { fqdn: 'db.example', addresses: ['10.0.0.1'] }))).toBe('db.example');
    expect(hostLabel(host('0190f0e4-aaaa', { addresses: ['10.0.0.1'] }))).toBe('10.0.0.1');
    expect(hostLabel(host('0190f0e4-aaaa', {}))).toBe('0190f0e4');
    expect(hostLabel(undefined)).toBeUndefined();
  });

  it('orders hosts by label with numbers compared as numbers, not as strings', () => {
    const hosts = [
      host('a', { hostname: 'srv-10' }), host('b', { hostname: 'srv-2' }), host('c', { addresses: ['10.0.0.10'] }),
      host('d', { addresses: ['10.0.0.9'] }), host('e', { hostname: 'srv-1' }), host('f', { fqdn: 'Alpha.example' }),
    ];
    expect([...hosts].sort(byHostLabel).map((h) => hostLabel(h))).toEqual(['10.0.0.9', '10.0.0.10', 'Alpha.example', 'srv-1', 'srv-2', 'srv-10']);
  });
});
