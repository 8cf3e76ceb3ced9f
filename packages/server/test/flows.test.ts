import { randomUUID } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { giveBody, pooledBodies, readBody, takeBody } from '../src/ingest/flow-body.js';
import { scanFlows } from '../src/ingest/flow-check.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, seedOrg } from './helpers.js';
import { addHost, addService } from './fixtures.js';

// Days before today: flow buckets are stored only inside the 30-day window.
const day = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);
const [d18, d19, d20, d21] = [day(7), day(6), day(5), day(4)];

describe('POST /api/v1/daemon/flows (spec 2.5, 4.4)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let headers: Record<string, string>;
  let daemonId: string;
  let web: string;
  let https: string;
  let client: string;
  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    const token = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
    daemonId = (await t.app.inject({ method: 'POST', url: '/api/v1/daemon/register', headers: bearer(token), payload: { name: 'flowd', bootId: randomUUID(), capabilities: { ebpf: true } } })).json().daemonId;
    headers = { ...bearer(token), 'x-daemon-id': daemonId };
    web = await addHost(t.database.db, org.organisationId, { hostname: 'web', addresses: ['10.0.0.10', '2001:db8::10'] });
    https = await addService(t.database.db, org.organisationId, web, { port: 443, name: 'https' });
    client = await addHost(t.database.db, org.organisationId, { hostname: 'client', addresses: ['10.0.0.20'] });
  });
  afterAll(() => t.close());

  const flow = (over: Record<string, unknown> = {}) => ({ bucketStart: `${d20}T10:00:00Z`, srcIp: '10.0.0.20', dstIp: '10.0.0.10', dstPort: 443, protocol: 'tcp', packets: 10, bytes: 5000, source: 'ebpf', ...over });
  const stored = async () =>
    (await sql<{ src_host_id: string | null; dst_host_id: string | null; dst_service_id: string | null; dst_port: number; bytes: number }>`
      select src_host_id, dst_host_id, dst_service_id, dst_port, bytes::int as bytes from flows_resolved where organisation_id = ${org.organisationId} order by bucket_start, dst_port, bytes`.execute(t.database.db)).rows;

  it('stores each record, resolved to the inventory by (dstIp, dstPort) and by source address, unknown peers with null ids', async () => {
    const res = await t.app.inject({
      method: 'POST', url: '/api/v1/daemon/flows', headers,
      payload: { flows: [flow(), flow({ dstPort: 8080, bytes: 100 }), flow({ srcIp: '192.0.2.99', dstIp: '2001:db8::10', bucketStart: `${d21}T23:59:00Z`, bytes: 7 }), flow({ dstIp: '198.51.100.1', bytes: 1, bucketStart: `${d19}T00:00:00+02:00` })], dropped: 0 },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ accepted: 4, outOfWindow: 0 });
    const rows = await stored();
    expect(rows).toEqual(expect.arrayContaining([
      { src_host_id: client, dst_host_id: web, dst_service_id: https, dst_port: 443, bytes: 5000 },
      { src_host_id: client, dst_host_id: web, dst_service_id: null, dst_port: 8080, bytes: 100 },
      { src_host_id: null, dst_host_id: web, dst_service_id: https, dst_port: 443, bytes: 7 },
      { src_host_id: client, dst_host_id: null, dst_service_id: null, dst_port: 443, bytes: 1 },
    ]));
  });

  it('keeps a bucket to the microsecond: one in the last half-microsecond of a day stays in that day, a retry stores nothing', async () => {
    const last = [`${d18}T23:59:59.9999995Z`, `${d18}T23:59:59.99999999Z`, `${d18}T22:59:59.9999999-01:00`];
    const delivery = { flows: last.map((bucketStart, i) => flow({ bucketStart, bytes: 900_000 + i })), dropped: 0 };
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: delivery });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ accepted: attempt === 0 ? 3 : 0, outOfWindow: 0 });
    }
    const rows = (await sql<{ at: string }>`
      select to_char(bucket_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as at from flows
      where organisation_id = ${org.organisationId} and bytes between 900000 and 900002`.execute(t.database.db)).rows;
    expect(rows.map((r) => r.at)).toEqual(Array(3).fill(`${d18}T23:59:59.999999`));
  });

  it('never stores a retried delivery twice', async () => {
    const before = (await stored()).length;
    const batch = { flows: [flow({ bucketStart: `${d20}T11:00:00Z` }), flow({ bucketStart: `${d20}T11:01:00Z` })] };
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: batch })).json()).toEqual({ accepted: 2, outOfWindow: 0 });
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: batch })).json()).toEqual({ accepted: 0, outOfWindow: 0 });
    expect((await stored()).length).toBe(before + 2);
  });

  it('stores a retried delivery once even when the two copies arrive at the same time', async () => {
    const before = (await stored()).length;
    const batch = { flows: [flow({ bucketStart: `${d20}T14:00:00Z` }), flow({ bucketStart: `${d20}T14:01:00Z` }), flow({ bucketStart: `${d20}T14:02:00Z` })] };
    const answers = await Promise.all([1, 2].map(() => t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: batch })));
    expect(answers.map((a) => a.json().accepted).sort()).toEqual([0, 3]);
    expect((await stored()).length).toBe(before + 3);
  });

  it('resolves a flow stored before its host was known, once a scan has found the host', async () => {
    const batch = { flows: [flow({ bucketStart: `${d20}T15:00:00Z`, srcIp: '10.0.0.20', dstIp: '10.0.0.77', dstPort: 22 })] };
    await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: batch });
    const resolved = async () =>
      (await sql<{ dst_host_id: string | null; dst_service_id: string | null }>`
        select dst_host_id, dst_service_id from flows_resolved where organisation_id = ${org.organisationId} and dst_ip = '10.0.0.77'`.execute(t.database.db)).rows;
    expect(await resolved()).toEqual([{ dst_host_id: null, dst_service_id: null }]);
    const late = await addHost(t.database.db, org.organisationId, { hostname: 'late', addresses: ['10.0.0.77'] });
    const ssh = await addService(t.database.db, org.organisationId, late, { port: 22, name: 'ssh' });
    expect(await resolved()).toEqual([{ dst_host_id: late, dst_service_id: ssh }]);
  });

  it('stores protocol and source names holding quotes, backslashes and commas exactly as sent', async () => {
    const odd = 'a"b\\c,{d} NULL';
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: { flows: [flow({ bucketStart: `${d20}T16:00:00Z`, protocol: 'X"Y', source: odd })] } });
    expect(res.json()).toEqual({ accepted: 1, outOfWindow: 0 });
    const row = (await sql<{ protocol: string; source: string }>`select protocol, source from flows where organisation_id = ${org.organisationId} and bucket_start = ${`${d20}T16:00:00Z`}::timestamptz`.execute(t.database.db)).rows;
    expect(row).toEqual([{ protocol: 'x"y', source: odd }]);
  });

  it('stores a delivery read from its bytes (binary COPY) exactly as one parsed as JSON (text COPY)', async () => {
    const records = [
      // (At most 15 digits: the scan reads longer integers, 2^53 - 1 among them, by JSON.parse instead.)
      flow({ bucketStart: `${d19}T10:00:00.123456Z`, srcIp: '2001:DB8::1', dstIp: '::ffff:10.0.0.1', dstPort: 0, protocol: 'UDP', packets: 123_456_789_012_345, bytes: 0 }),
      flow({ bucketStart: `${d19}T12:30:00.5+02:00`, srcIp: '255.255.255.255', dstIp: '0.0.0.0', dstPort: 65535, packets: 999_999_999_999_999, bytes: 2 ** 31 - 1, source: 'x'.repeat(50) }),
      flow({ bucketStart: `${d19}T10:00:00Z`, srcIp: 'fe80::1:2:3:4', dstIp: '10.0.0.10' }),
    ];
    const plain = JSON.stringify({ flows: records, dropped: 0 });
    // An escape in a string (the same value) sends the body to JSON.parse; another `dropped` makes it another delivery.
    const escaped = JSON.stringify({ flows: records, dropped: 1 }).replaceAll('"ebpf"', '"\\u0065bpf"');
    // The first is read from its bytes (binary COPY), the second is not.
    expect(scanFlows(Buffer.from(plain))).not.toBeNull();
    expect(scanFlows(Buffer.from(escaped))).toBeNull();
    for (const payload of [plain, escaped])
      expect((await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...headers, 'content-type': 'application/json' }, payload })).json()).toEqual({ accepted: 3, outOfWindow: 0 });
    const rows = await sql<{ n: number }>`
      select count(*)::int as n from flows where organisation_id = ${org.organisationId} and bucket_start >= ${`${d19}T00:00:00Z`}::timestamptz and bucket_start < ${`${d19}T00:00:00Z`}::timestamptz + interval '1 day'
      group by bucket_start, daemon_id, src_ip, dst_ip, dst_port, protocol, packets, bytes, source`.execute(t.database.db);
    expect(rows.rows.map((r) => r.n)).toEqual([2, 2, 2]);
    const first = (await sql<{ b: string; s: string; d: string; p: string }>`
      select to_char(bucket_start at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') as b, host(src_ip) as s, host(dst_ip) as d, protocol as p from flows
      where organisation_id = ${org.organisationId} and packets = ${123_456_789_012_345} limit 1`.execute(t.database.db)).rows[0];
    expect(first).toEqual({ b: `${d19} 10:00:00.123456`, s: '2001:db8::1', d: '::ffff:10.0.0.1', p: 'udp' });
  });

  it('keeps records in daily partitions', async () => {
    const parts = await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent where p.relname = 'flows' order by 1`.execute(t.database.db);
    expect(parts.rows.map((r) => r.name)).toEqual(expect.arrayContaining([`flows_${d18.replace(/-/g, '')}`, `flows_${d20.replace(/-/g, '')}`, `flows_${d21.replace(/-/g, '')}`]));
  });

  it('accumulates dropped on the daemon, once per delivery of records and at each delivery of dropped alone', async () => {
    const before = Number((await t.database.db.selectFrom('daemons').select('flows_dropped').where('id', '=', daemonId).executeTakeFirstOrThrow()).flows_dropped);
    await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: { flows: [], dropped: 5 } });
    await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: { flows: [], dropped: 5 } });
    const withRecords = { flows: [flow({ bucketStart: `${d20}T17:00:00Z` })], dropped: 7 };
    await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: withRecords });
    await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: withRecords }); // a retry
    const d = await t.database.db.selectFrom('daemons').select('flows_dropped').where('id', '=', daemonId).executeTakeFirstOrThrow();
    expect(Number(d.flows_dropped) - before).toBe(17);
  });

  it('accepts a gzip body and refuses an unsupported encoding with 415', async () => {
    const body = gzipSync(JSON.stringify({ flows: [flow({ bucketStart: `${d20}T12:00:00Z` })] }));
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...headers, 'content-type': 'application/json', 'content-encoding': 'gzip' }, payload: body });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ accepted: 1, outOfWindow: 0 });
    const br = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...headers, 'content-type': 'application/json', 'content-encoding': 'br' }, payload: body });
    expect(br.statusCode).toBe(415);
    expect(br.json().code).toBe('unsupported_media_type');
  });

  it('refuses a malformed record with 400 naming the field, storing nothing of the batch', async () => {
    const before = (await stored()).length;
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: { flows: [flow({ bucketStart: `${d20}T13:00:00Z` }), flow({ dstPort: 70000 })] } });
    expect(res.statusCode).toBe(400);
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.flows.1.dstPort');
    expect((await stored()).length).toBe(before);
  });

  it('answers a body that is not JSON, or empty, with 400 validation_failed, storing nothing', async () => {
    const before = (await stored()).length;
    for (const payload of ['{"flows": [', '']) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...headers, 'content-type': 'application/json' }, payload });
      expect(res.statusCode, payload).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    expect((await stored()).length).toBe(before);
  });

  it('drops __proto__ and constructor keys of a batch (validation keeps known fields only): nothing is polluted', async () => {
    const record = JSON.stringify(flow({ bucketStart: `${d20}T18:00:00Z` })).replace(/^\{/, '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},');
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...headers, 'content-type': 'application/json' }, payload: `{"flows":[${record}],"__proto__":{"polluted":true}}` });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ accepted: 1, outOfWindow: 0 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a batch over SERVICE_INGEST_BODY_LIMIT_BYTES with 413 payload_too_large', async () => {
    const small = await buildTestApp({ env: { SERVICE_INGEST_BODY_LIMIT_BYTES: '2048' } });
    try {
      const o = await seedOrg(small.database);
      const tok = (await admin.createDaemonKey(small.database.db, { type: 'cli' }, { org: o.organisationId })).token;
      const id = (await small.app.inject({ method: 'POST', url: '/api/v1/daemon/register', headers: bearer(tok), payload: { name: 'big', bootId: randomUUID() } })).json().daemonId;
      const res = await small.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...bearer(tok), 'x-daemon-id': id }, payload: { flows: Array.from({ length: 40 }, () => flow()) } });
      expect(res.statusCode).toBe(413);
      expect(res.json().code).toBe('payload_too_large');
      // Chunked, without a Content-Length: refused as it passes the limit.
      const chunked = await small.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...bearer(tok), 'x-daemon-id': id, 'content-type': 'application/json' }, payload: Readable.from([Buffer.from(JSON.stringify({ flows: Array.from({ length: 40 }, () => flow()) }))]) });
      expect(chunked.statusCode).toBe(413);
      expect(chunked.json().code).toBe('payload_too_large');
    } finally {
      await small.close();
    }
  });

  // The body is read into a pooled buffer of its length (ingest/flow-body.ts), with fastify's checks.
  it('refuses a body longer or shorter than its Content-Length with 400, storing nothing', async () => {
    const before = (await stored()).length;
    const payload = JSON.stringify({ flows: [flow({ bucketStart: `${d20}T19:00:00Z` })] });
    for (const length of [payload.length - 5, payload.length + 5]) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...headers, 'content-type': 'application/json', 'content-length': String(length) }, payload });
      expect(res.statusCode, String(length)).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json().code).toBe('validation_failed');
    }
    expect((await stored()).length).toBe(before);
  });

  it('reads a chunked body without a Content-Length, in pieces of any size', async () => {
    const text = JSON.stringify({ flows: Array.from({ length: 3000 }, (_, i) => flow({ bucketStart: `${d20}T20:00:00Z`, bytes: 100_000 + i })) });
    expect(text.length).toBeGreaterThan(256 * 1024); // past the first buffer of an unknown length
    const pieces = Array.from({ length: Math.ceil(text.length / 7001) }, (_, i) => Buffer.from(text.slice(i * 7001, (i + 1) * 7001)));
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...headers, 'content-type': 'application/json' }, payload: Readable.from(pieces) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ accepted: 3000, outOfWindow: 0 });
  });

  it('gives an empty delivery\'s body back to the pool', async () => {
    while (pooledBodies() > 0) takeBody(0);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers, payload: { flows: [], dropped: 0 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(pooledBodies()).toBe(1);
  });

  it('refuses an empty body with 400, with or without a Content-Length', async () => {
    for (const payload of ['', Readable.from([])]) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...headers, 'content-type': 'application/json' }, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
  });

  it('refuses a truncated body (the stream breaks before its end) with 400, keeping nothing of it', async () => {
    const stream = new PassThrough();
    const answer = new Promise<{ err: Error | null; body?: unknown }>((resolve) => readBody({ 'content-length': '100' }, stream, 1000, (err, body) => resolve({ err, body })));
    stream.write(Buffer.from('{"flows":['));
    stream.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    const { err, body } = await answer;
    expect(body).toBeUndefined();
    expect((err as Error & { statusCode?: number }).statusCode).toBe(400);
  });

  it('reads into buffers of the declared length, refusing a body past the limit as it arrives', async () => {
    const read = (headers: { 'content-length'?: string }, chunks: string[], limit: number) =>
      new Promise<{ err: (Error & { code?: string; statusCode?: number }) | null; text?: string }>((resolve) => {
        const stream = new PassThrough();
        readBody(headers, stream, limit, (err, body) => resolve({ err, text: body?.buffer.toString('utf8', 0, body.length) }));
        for (const c of chunks) stream.write(c);
        stream.end();
      });
    expect(await read({ 'content-length': '6' }, ['abc', 'def'], 10)).toEqual({ err: null, text: 'abcdef' });
    expect(await read({}, ['abc', 'def'], 10)).toEqual({ err: null, text: 'abcdef' });
    expect((await read({ 'content-length': '11' }, [], 10)).err?.code).toBe('FST_ERR_CTP_BODY_TOO_LARGE');
    expect((await read({}, ['abcdef', 'ghijk'], 10)).err?.code).toBe('FST_ERR_CTP_BODY_TOO_LARGE');
    expect((await read({ 'content-length': '4' }, ['abcdef'], 10)).err?.code).toBe('FST_ERR_CTP_INVALID_CONTENT_LENGTH');
    expect((await read({ 'content-length': '8' }, ['abcdef'], 10)).err?.code).toBe('FST_ERR_CTP_INVALID_CONTENT_LENGTH');
    // A buffer given back serves the next body that fits in it.
    const b = takeBody(64);
    giveBody(b);
    expect(takeBody(64)).toBe(b);
  });

  it('needs the daemon\'s X-Daemon-ID', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { authorization: headers.authorization! }, payload: { flows: [] } });
    expect(res.statusCode).toBe(401);
  });
});
