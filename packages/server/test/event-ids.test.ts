import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emit } from '../src/events/emit.js';
import { eventsSince } from '../src/events/events.js';
import { type SeededOrg, type TestApp, type TestDatabase, buildTestApp, createTestDatabase, login, seedOrg } from './helpers.js';

// Event ids do not leak other organisations' activity (issue 18, section 2, item 4): the live
// stream's ids and the events' seq are numbered per organisation, so organisation A's ids say
// nothing of how much B did meanwhile; and Last-Event-ID still resumes across a restart.

/** `n` changes of the organisation, one statement; returns their ids. */
async function changes(t: TestApp, organisationId: string, n: number): Promise<number[]> {
  const r = await sql<{ id: string | number }>`
    insert into change_log (organisation_id, entity_type, entity_id, action)
    select ${organisationId}::uuid, 'host', gen_random_uuid()::text, 'updated' from generate_series(1, ${n}::int) returning id`.execute(t.database.db);
  return r.rows.map((x) => Number(x.id)).sort((a, b) => a - b);
}

const consecutive = (ids: number[]) => ids.every((id, i) => i === 0 || id === ids[i - 1]! + 1);

/** A raw SSE reader: the `id:` of every frame received. */
async function openStream(t: TestApp, cookie: string, lastEventId?: number) {
  const { port } = t.app.server.address() as AddressInfo;
  const ac = new AbortController();
  const res = await fetch(`http://127.0.0.1:${port}/api/sse`, { headers: { cookie, ...(lastEventId !== undefined ? { 'last-event-id': String(lastEventId) } : {}) }, signal: ac.signal });
  expect(res.status).toBe(200);
  const ids: number[] = [];
  let text = '';
  const reader = res.body!.getReader();
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += Buffer.from(value).toString('utf8');
        let cut: number;
        while ((cut = text.indexOf('\n\n')) >= 0) {
          const frame = text.slice(0, cut);
          text = text.slice(cut + 2);
          const id = /^id: (\d+)$/m.exec(frame);
          if (id) ids.push(Number(id[1]));
        }
      }
    } catch {
      // aborted
    }
  })();
  return { ids, close: () => ac.abort() };
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('event ids per organisation', () => {
  let testDb: TestDatabase;
  let t: TestApp;
  let a: SeededOrg;
  let b: SeededOrg;
  const start = async () => {
    t = await buildTestApp({ testDb });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
  };
  beforeAll(async () => {
    testDb = await createTestDatabase();
    await start();
    a = await seedOrg(t.database);
    b = await seedOrg(t.database);
  });
  afterAll(async () => {
    await t?.close();
    await testDb?.drop();
  });

  it("numbers A's changes one after the other, however many B makes in between", async () => {
    const ids: number[] = [];
    for (const [nA, nB] of [[3, 7], [1, 50], [2, 1], [4, 13]] as const) {
      ids.push(...(await changes(t, a.organisationId, nA)));
      await changes(t, b.organisationId, nB);
    }
    expect(ids).toHaveLength(10);
    expect(consecutive(ids), `A's ids: ${ids.join(', ')}`).toBe(true);
  });

  it("numbers A's events (GET /api/v1/admin/events seq) one after the other, however many B has", async () => {
    const fire = (org: string, n: number) =>
      emit(t.database.db, org, 'host.discovered', Array.from({ length: n }, (_, i) => ({ subjectId: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`, data: { fingerprint: `fp-${i}`, siteId: null } })));
    for (const [nA, nB] of [[2, 5], [1, 9], [3, 2]] as const) {
      await fire(a.organisationId, nA);
      await fire(b.organisationId, nB);
    }
    const seqs = (await eventsSince(t.database.db, a.organisationId)).filter((e) => e.kind === 'host.discovered').map((e) => e.seq);
    expect(seqs).toHaveLength(6);
    expect(consecutive(seqs), `A's seqs: ${seqs.join(', ')}`).toBe(true);
  });

  it('resumes after a server restart with exactly the changes missed, numbered on from the last one seen', async () => {
    const { cookie } = await login(t.app, a.ownerEmail);
    const first = await openStream(t, cookie);
    await new Promise((r) => setTimeout(r, 200));
    const live = await changes(t, a.organisationId, 3);
    await changes(t, b.organisationId, 4);
    await waitFor('the three live changes', () => first.ids.length >= 3);
    expect(first.ids).toEqual(live);
    const last = first.ids.at(-1)!;
    first.close();

    // The server goes away; both organisations change meanwhile; it comes back.
    await t.close();
    const missed = await (async () => {
      const db = testDb.database.db;
      const ins = async (org: string, n: number) =>
        (await sql<{ id: string }>`insert into change_log (organisation_id, entity_type, entity_id, action) select ${org}::uuid, 'host', gen_random_uuid()::text, 'updated' from generate_series(1, ${n}::int) returning id`.execute(db)).rows.map((r) => Number(r.id));
      const m = await ins(a.organisationId, 2);
      await ins(b.organisationId, 30);
      m.push(...(await ins(a.organisationId, 1)));
      return m.sort((x, y) => x - y);
    })();
    expect(missed).toEqual([last + 1, last + 2, last + 3]);
    await start();

    const resumed = await openStream(t, cookie, last);
    await waitFor('the missed changes', () => resumed.ids.length >= 3);
    const after = await changes(t, a.organisationId, 1);
    await waitFor('the next live change', () => resumed.ids.length >= 4);
    await new Promise((r) => setTimeout(r, 200));
    expect(resumed.ids).toEqual([...missed, ...after]);
    expect(after).toEqual([last + 4]);
    resumed.close();
  });
});
