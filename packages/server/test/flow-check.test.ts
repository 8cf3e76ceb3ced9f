import { createHash } from 'node:crypto';
import { FlowsRequest } from '@surveyor/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkFlowsFast, scanFlows } from '../src/ingest/flow-check.js';
import { copyRowsOf } from '../src/ingest/flows.js';

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

  // scanFlows reads a body's bytes straight into COPY rows: it may only accept what JSON.parse and
  // the schema accept, with the same records and the same rows (so the same digest) as that path.
  const spellings = fc.constantFrom(
    (b: unknown) => JSON.stringify(b),
    (b: unknown) => JSON.stringify(b, null, 2),
    (b: unknown) => ` \r\n${JSON.stringify(b, null, '\t')}\n`,
    // Keys in another order.
    (b: unknown) => JSON.stringify(b, (_k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v)),
  );
  it('reads from the bytes only what the schema accepts, into the rows the object path stores', () => {
    let scanned = 0;
    const timestamps = fc.constantFrom('2026-11-27T10:01:00.1Z', '2026-11-27T10:01:00.123456Z', '2026-11-27T10:01:00.1234567Z', '1999-12-31T23:59:59.999999-01:00', '1969-07-20T20:17:40.5Z');
    const withTimes = body.chain((b) => (Array.isArray(b.flows) && b.flows.length && typeof b.flows[0] === 'object' && b.flows[0] ? timestamps.map((bs) => ({ ...b, flows: [{ ...(b.flows as object[])[0], bucketStart: bs }, ...(b.flows as object[]).slice(1)] })) : fc.constant(b)));
    fc.assert(
      fc.property(fc.oneof(body, withTimes), spellings, (b, spell) => {
        const text = spell(b);
        const fast = scanFlows(Buffer.from(text));
        if (fast === null) return;
        scanned++;
        const slow = FlowsRequest.safeParse(JSON.parse(text));
        expect(slow.success).toBe(true);
        expect(fast.flows).toEqual(slow.data!.flows);
        expect(fast.dropped).toBe(slow.data!.dropped);
        expect(fast.count).toBe(slow.data!.flows.length);
        // The digest of the rows the object path stores: the same bytes.
        expect(fast.digest).toBe(createHash('sha256').update(copyRowsOf(slow.data!.flows)).update(`|${slow.data!.dropped}`).digest('hex'));
        expect(fast.tuples.length).toBe(fast.count);
      }),
      { numRuns: 3000 },
    );
    expect(scanned).toBeGreaterThan(50);
  });

  it('leaves to JSON.parse what is not in the plain form', () => {
    const plain = (b: unknown) => scanFlows(Buffer.from(JSON.stringify(b)));
    expect(plain({ flows: [good], dropped: 2 })?.count).toBe(1);
    for (const text of [
      JSON.stringify({ flows: [{ ...good, source: 'a\\b' }] }),
      JSON.stringify({ flows: [{ ...good, source: 'é' }] }),
      JSON.stringify({ flows: [good] }).replace('443', '443.0'),
      JSON.stringify({ flows: [good] }).replace('443', '4.43e2'),
      JSON.stringify({ flows: [good] }).replace('"bytes":1200', '"bytes":01200'),
      JSON.stringify({ flows: [good], dropped: 1 }).replace('"dropped":1', '"dropped":1,"dropped":2'),
      JSON.stringify({ flows: [{ ...good, bucketStart: '2026-11-27T10:01:00.1234567Z' }] }),
      `${JSON.stringify({ flows: [good] })}x`,
      // A key that starts as the expected one, or is cut short, at the body's end too.
      JSON.stringify({ flows: [good] }).replace('"bytes"', '"bytesx"'),
      JSON.stringify({ flows: [good] }).replace('"bytes"', '"byte"'),
      '{"flows":[{"bucketStart',
      '{"flows":[{"bucketStart"',
      JSON.stringify({ flows: [good] }).slice(0, -1),
      '\ufeff{"flows":[]}',
    ])
      expect(scanFlows(Buffer.from(text))).toBeNull();
  });
});

