import { collectionPages } from '@surveyor/contract';
import fc from 'fast-check';
import fastJson from 'fast-json-stringify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CursorCodec } from '../src/inventory/cursor.js';
import { hostArrayPage, listCollection, toHost } from '../src/inventory/inventory.service.js';
import { arrayPageWriter, jsonString } from '../src/inventory/page-json.js';
import { addHost, addHosts, addService } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, seedMemberWithKey, seedOrg } from './helpers.js';

// Issue 30: a collection with a page writer answers the JSON text of its page written straight
// from the rows. It must be exactly the text the route's serializer (fast-json-stringify from the
// contract's schema) and JSON.stringify write for the page of contract items (`toHost` of each row).

const RUNS = Number(process.env.FUZZ_RUNS || 300);

/** The serializer the routes compile from the contract (http/app.ts). */
const contractSerializer = (schema: z.ZodType) => fastJson(z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'output', unrepresentable: 'any' }) as never);

/** Text with everything JSON escapes: quotes, backslashes, controls, lone and paired surrogates, non-ASCII. */
const text = fc.string({
  unit: fc.oneof(
    fc.constantFrom('"', '\\', '\n', '\t', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udfff', '\ud83d\ude00', 'é', '/', '<'),
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    fc.constantFrom('a', 'b', '-', '.', ' '),
  ),
  maxLength: 60,
});
const time = fc.date({ min: new Date('0100-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString());
const orNull = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });

/** A row as listHosts reads it (the arrays as the JSON text PostgreSQL writes for them). */
const hostRow = fc.record({
  id: fc.uuid(),
  seq: fc.integer({ min: 1 }),
  site_id: orNull(fc.uuid()),
  hostname: orNull(text),
  fqdn: orNull(text),
  addresses_json: fc.array(text, { maxLength: 4 }).map((xs) => JSON.stringify(xs)),
  macs_json: fc.array(text, { maxLength: 3 }).map((xs) => JSON.stringify(xs)),
  vendor: orNull(text),
  os: orNull(text),
  device_type: orNull(text),
  parent_host_id: orNull(fc.uuid()),
  open_port_count: fc.integer({ min: 0, max: 70_000 }),
  first_seen_at: time,
  last_seen_at: time,
  gone_at: orNull(time),
  created_at: time,
  updated_at: time,
});

describe('page writers (issue 30): the text of a page is what its contract items serialise to', () => {
  it('jsonString writes any string exactly as JSON.stringify does', () => {
    fc.assert(fc.property(text, (s) => jsonString(s) === JSON.stringify(s)), { numRuns: RUNS * 10 });
  });

  it('a page of hosts from rows as arrays, their columns in any order, is the contract serializer\'s and JSON.stringify\'s text of toHost of its rows, whatever the values', () => {
    const serialize = contractSerializer(collectionPages.hosts);
    const columns = Object.keys(fc.sample(hostRow, 1)[0]!);
    fc.assert(
      fc.property(fc.array(hostRow, { maxLength: 6 }), orNull(text), fc.boolean(), fc.shuffledSubarray(columns, { minLength: columns.length }), (rows, nextCursor, hasMore, order) => {
        const page = { data: rows.map(toHost), nextCursor, hasMore };
        const written = hostArrayPage(order, rows.map((r) => order.map((c) => r[c as keyof typeof r])), nextCursor, hasMore);
        expect(written).toBe(JSON.stringify(page));
        expect(written).toBe(serialize(page));
      }),
      { numRuns: RUNS },
    );
  });

  it('writes every kind of column, null where nullable', () => {
    const write = arrayPageWriter([
      { key: 'u', column: 'u', kind: 'uuid' },
      { key: 't', column: 't', kind: 'time', nullable: true },
      { key: 's', column: 's', kind: 'text' },
      { key: 'n', column: 'n', kind: 'int', nullable: true },
      { key: 'b', column: 'b', kind: 'bool' },
      { key: 'j', column: 'j', kind: 'json', nullable: true },
    ]);
    const columns = ['j', 'b', 'n', 's', 't', 'u'];
    const row = { u: '0190f0e4-0000-7000-8000-000000000001', t: '2026-11-27T10:00:00.000Z', s: 'a "b"', n: 3, b: true, j: '["x"]' };
    const nulls = { ...row, t: null, n: null, b: false, j: null };
    const values = (r: Record<string, unknown>) => columns.map((c) => r[c]);
    expect(JSON.parse(write(columns, [values(row), values(nulls)], 'c', true))).toEqual({
      data: [
        { u: row.u, t: row.t, s: 'a "b"', n: 3, b: true, j: ['x'] },
        { u: row.u, t: null, s: 'a "b"', n: null, b: false, j: null },
      ],
      nextCursor: 'c',
      hasMore: true,
    });
    expect(write([], [], null, false)).toBe('{"data":[],"nextCursor":null,"hasMore":false}');
    expect(write([], [], 'c"', true)).toBe('{"data":[],"nextCursor":"c\\"","hasMore":true}');
  });
});

describe('GET /api/v1/hosts through its page writer, on the database (issue 30)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let token: string;
  let cursors: CursorCodec;

  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    token = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
    cursors = new CursorCodec(t.secretKey);
    const db = t.database.db;
    const o = org.organisationId;
    // Values JSON must escape, IPv6 and IPv4 addresses, MACs, null fields, a gone host, open services.
    const odd = await addHost(db, o, { hostname: 'quote " back \\ tab \t nl \n', fqdn: 'ünïcødé.example 😀', addresses: ['2001:db8::1', '10.1.2.3'], macs: ['00:16:3e:aa:bb:cc', null as never], os: '\u0001ctl' });
    await addService(db, o, odd, { port: 22 });
    await addService(db, o, odd, { port: 443 });
    await addHost(db, o, {});
    const gone = await addHost(db, o, { hostname: 'gone', addresses: ['10.1.2.4'] });
    await sql`update hosts set gone_at = now(), vendor = 'Vendor <&>', device_type = 'router', parent_host_id = ${odd} where id = ${gone}`.execute(db);
    await addHosts(db, o, 7);
  });
  afterAll(() => t.close());

  it('answers, page after page, exactly the JSON text of the pages listCollection builds from contract items', async () => {
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: { limit: number; cursor?: string } = { limit: 4, ...(cursor ? { cursor } : {}) };
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, headers: bearer(token) });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      const expected: { nextCursor: string | null } = await listCollection(t.database.db, cursors, org.organisationId, 'hosts', query as never);
      expect(res.body).toBe(JSON.stringify(expected));
      cursor = expected.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
  });

  it('the odd host reads back as written: escapes, addresses in order, MACs, the open port count', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/hosts?limit=1', headers: bearer(token) });
    expect(res.json().data[0]).toMatchObject({
      hostname: 'quote " back \\ tab \t nl \n',
      fqdn: 'ünïcødé.example 😀',
      os: '\u0001ctl',
      addresses: ['10.1.2.3', '2001:db8::1'],
      macs: ['00:16:3e:aa:bb:cc'],
      openPortCount: 2,
    });
  });

  it('the filtered and searched pages answer the same text as their items, a search that matches nothing too', async () => {
    const [first] = (await listCollection(t.database.db, cursors, org.organisationId, 'hosts', { limit: 1 } as never)).data as { id: string }[];
    const queries: [string, string][] = [
      ['gone', 'only'], ['gone', 'exclude'], ['source', 'daemon'], ['siteId', '0190f0e4-0000-7000-8000-000000000001'],
      ['search', 'quote'], ['search', '10.1.2.3'], ['search', '10.1.2.0/24'], ['search', first!.id], ['search', 'no-such-host'],
    ];
    let found = 0;
    for (const [k, v] of queries) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts?limit=50&${k}=${encodeURIComponent(v)}`, headers: bearer(token) });
      expect(res.statusCode).toBe(200);
      const expected = await listCollection(t.database.db, cursors, org.organisationId, 'hosts', { limit: 50, [k]: v } as never);
      expect(res.body).toBe(JSON.stringify(expected));
      found += (expected as { data: unknown[] }).data.length;
    }
    expect(found).toBeGreaterThan(10);
  });
});
