import { FlowsRequest } from '@surveyor/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkFlowsFast } from '../src/ingest/flow-check.js';

// The flow route's fast body check (issue 30) may only ever accept what FlowsRequest accepts,
// with the same output; what it does not accept goes to the schema.
const good = { bucketStart: '2026-11-27T10:01:00Z', srcIp: '10.0.0.1', dstIp: '10.0.0.2', dstPort: 443, protocol: 'tcp', packets: 3, bytes: 1200, source: 'softflowd' };

const values = {
  bucketStart: ['2026-11-27T10:01:00Z', '2026-11-27T10:01:00.123+02:00', '2026-13-27T10:01:00Z', '2026-02-30T10:01:00Z', '2026-11-27 10:01:00Z', '2026-11-27T10:01:00', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59-14:00', 42, null],
  ip: ['10.0.0.1', '255.255.255.255', '010.0.0.1', '10.0.0.256', '2001:DB8::1', '2001:db8:0:0:0:0:0:1', '::ffff:10.0.0.1', 'fe80::1%eth0', '', 'host', 7],
  dstPort: [0, 65535, 65536, -1, 1.5, '80', null],
  protocol: ['tcp', 'UDP', 'icmp', '', 'x'.repeat(20), 'x'.repeat(21), '\uD800', 6],
  count: [0, 1, 2 ** 53 - 1, 2 ** 53, -1, 0.5, '1', Number.NaN],
  source: ['softflowd', 'ebpf', '', 'y'.repeat(50), 'y'.repeat(51), '\uDC00x', false],
};
// Mostly the first (valid) value, so that whole batches pass often enough to compare outputs.
const pick = <T>(list: T[]) => fc.oneof({ weight: 12, arbitrary: fc.constant(list[0]!) }, { weight: 1, arbitrary: fc.constantFrom(...list) });
const record = fc.record({
  bucketStart: pick(values.bucketStart),
  srcIp: pick(values.ip),
  dstIp: pick(values.ip),
  dstPort: pick(values.dstPort),
  protocol: pick(values.protocol),
  packets: pick(values.count),
  bytes: pick(values.count),
  source: pick(values.source),
});
// A record as sent: sometimes a key missing, one extra, or not an object at all.
const sent = fc.oneof(
  { weight: 30, arbitrary: record },
  { weight: 1, arbitrary: fc.tuple(record, fc.constantFrom('bucketStart', 'srcIp', 'bytes', 'source')).map(([r, k]) => Object.fromEntries(Object.entries(r).filter(([x]) => x !== k))) },
  { weight: 1, arbitrary: fc.tuple(record, fc.constantFrom('extra', '__proto__', 'constructor')).map(([r, k]) => JSON.parse(JSON.stringify(r).replace(/^\{/, `{"${k}":1,`))) },
  { weight: 1, arbitrary: fc.constantFrom(null, [], 'flow', 1) },
);
const body = fc.record(
  { flows: fc.oneof({ weight: 9, arbitrary: fc.array(sent, { maxLength: 6 }) }, { weight: 1, arbitrary: fc.constantFrom(null, {}, 'x') }), dropped: pick([0, 3, -1, 1.5, '2', null]), more: fc.constant(1) },
  { requiredKeys: ['flows'] },
);

describe('flow delivery fast check (issue 30)', () => {
  it('accepts only what the schema accepts, with the same output', () => {
    let accepted = 0;
    fc.assert(
      fc.property(body, (b) => {
        const text = JSON.stringify(b);
        const fast = checkFlowsFast(JSON.parse(text));
        const slow = FlowsRequest.safeParse(JSON.parse(text));
        if (fast !== null) {
          accepted++;
          expect(slow.success).toBe(true);
          expect(fast).toEqual(slow.data);
        }
      }),
      { numRuns: 3000 },
    );
    // Not vacuous: the generator's valid bodies do reach the fast path.
    expect(accepted).toBeGreaterThan(50);
  });

  it('takes a canonical batch as is and gives canonical addresses out', () => {
    const flows = [good, { ...good, srcIp: '2001:DB8::1', dstIp: '::ffff:10.0.0.1', bucketStart: '2026-11-27T12:01:00+02:00' }];
    const fast = checkFlowsFast(JSON.parse(JSON.stringify({ flows, dropped: 2 })));
    expect(fast).toEqual(FlowsRequest.parse({ flows, dropped: 2 }));
    expect(fast?.flows[1]?.srcIp).toBe('2001:db8::1');
    expect(checkFlowsFast({ flows: [good] })).toEqual({ flows: [good], dropped: 0 });
  });

  it('leaves to the schema what it does not take', () => {
    for (const b of [
      { flows: [{ ...good, extra: 1 }] },
      { flows: [{ ...good, dstPort: 70000 }] },
      { flows: [{ ...good, srcIp: '010.0.0.1' }] },
      { flows: [good], dropped: -1 },
      { flows: [good], other: true },
      { flows: Array.from({ length: 200_001 }, () => good) },
    ])
      expect(checkFlowsFast(b)).toBeNull();
  });
});
