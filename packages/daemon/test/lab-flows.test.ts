import { afterAll, beforeAll, expect, it } from 'vitest';
import { FlowBuffer, FlowCollector } from '../src/flows/collector.js';
import type { RawFlow } from '../src/flows/netflow.js';
import { type Lab, buildLab, describeLab, fetchFrom } from './lab.js';

// The flow collector against real exporters: softflowd on the lab's bridge, exporting NetFlow v9
// and IPFIX, while one lab host fetches a page from another.

const WAIT = { timeout: 60_000, interval: 200 };

describeLab('flow collection from softflowd on the lab (NetFlow v9 and IPFIX)', () => {
  let lab: Lab;
  const collectors: FlowCollector[] = [];
  beforeAll(async () => {
    lab = await buildLab([{ services: ['http:80'] }, { services: [] }]);
  });
  afterAll(() => {
    for (const c of collectors) c.close();
    lab?.close();
  });

  it.each([9, 10] as const)('version %i: one record per conversation, client to server, the reply folded in, bucketed by minute', async (version) => {
    const raw: RawFlow[] = [];
    const collector = new FlowCollector(new FlowBuffer(1000), (f) => void raw.push(f));
    collectors.push(collector);
    const { port } = await collector.listen('127.0.0.1:0');
    await lab.exportFlows(`127.0.0.1:${port}`, version);
    const [server, client] = lab.hosts;
    const seen: ReturnType<FlowBuffer['take']>['flows'] = [];
    // The records that went into `seen` (records arriving after the last take are not in it).
    let taken = 0;
    const conversation = () => seen.filter((f) => f.srcIp === client!.v4 && f.dstIp === server!.v4 && f.dstPort === 80);
    // softflowd sees every packet on the bridge; fetch until a conversation has been exported whole.
    await expect
      .poll(async () => {
        await fetchFrom(client!.ns, `http://${server!.v4}/`);
        seen.push(...collector.buffer.take().flows);
        taken = raw.length;
        return conversation().length;
      }, WAIT)
      .toBeGreaterThan(0);
    const f = conversation()[0]!;
    expect(f).toMatchObject({ protocol: 'tcp', source: version === 9 ? 'netflow9' : 'ipfix' });
    expect(Date.parse(f.bucketStart) % 60_000).toBe(0);
    // softflowd exported both halves (client -> server:80 and server:80 -> client) as records ...
    const inBucket = (r: RawFlow) => Math.floor(r.startMs / 60_000) * 60_000 === Date.parse(f.bucketStart);
    const records = raw.slice(0, taken);
    const requests = records.filter((r) => r.srcIp === client!.v4 && r.dstIp === server!.v4 && r.dstPort === 80 && inBucket(r));
    const replies = records.filter((r) => r.srcIp === server!.v4 && r.srcPort === 80 && r.dstIp === client!.v4 && inBucket(r));
    expect(requests.length).toBeGreaterThan(0);
    expect(replies.length).toBeGreaterThan(0);
    // ... and the bucket carries both (one per conversation and minute), never the reply alone.
    const sum = (rs: RawFlow[], k: 'packets' | 'bytes') => rs.reduce((n, r) => n + r[k], 0);
    const buckets = conversation().filter((x) => x.bucketStart === f.bucketStart);
    expect(buckets.reduce((n, x) => n + x.packets, 0)).toBe(sum(requests, 'packets') + sum(replies, 'packets'));
    expect(buckets.reduce((n, x) => n + x.bytes, 0)).toBe(sum(requests, 'bytes') + sum(replies, 'bytes'));
    expect(seen.some((x) => x.srcIp === server!.v4 && x.dstIp === client!.v4)).toBe(false);
    expect(collector.packets).toBeGreaterThan(0);
  }, 90_000);
}, ['softflowd', 'gcc']);
