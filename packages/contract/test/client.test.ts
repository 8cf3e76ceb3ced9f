import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import { type ClientRequest, type Network, collectionPages, createClient, routePath, routes } from '../src/index.js';

// The typed client (issue 23): a route in, its URL built from params and query, its own response
// type out; the transport is the caller's.

function recording(answer: (r: ClientRequest) => { status: number; body: unknown }) {
  const sent: ClientRequest[] = [];
  const transport = async (r: ClientRequest) => {
    sent.push(r);
    return answer(r);
  };
  return { sent, transport };
}

describe('routePath', () => {
  it('fills the path parameters, each encoded, and appends the query without its empty values', () => {
    expect(routePath(routes.getHostTopology, { params: { id: 'a/b c' }, query: { windowHours: 48 } })).toBe('/api/v1/hosts/a%2Fb%20c/topology?windowHours=48');
    expect(routePath(routes.listHosts, { query: { search: '10.1', siteId: undefined, cursor: null, limit: 50 } })).toBe('/api/v1/hosts?search=10.1&limit=50');
    expect(routePath(routes.listHosts)).toBe('/api/v1/hosts');
    expect(routePath(routes.exportTopology, { params: { id: 'v1', format: 'drawio' } })).toBe('/api/v1/topology/v1/export/drawio');
  });

  it('refuses to build a path whose parameter is missing', () => {
    expect(() => routePath(routes.cancelScan, { params: { id: '' } })).toThrow('cancelScan: parameter id is missing');
  });
});

describe('createClient', () => {
  it("sends the route's method, path and body to the transport and answers its body", async () => {
    const network = { id: 'n' };
    const { sent, transport } = recording(() => ({ status: 201, body: network }));
    const call = createClient(transport);
    const body = { cidr: '10.0.0.0/24', name: 'lab' };
    await expect(call(routes.createNetwork, { body })).resolves.toBe(network);
    expect(sent).toEqual([{ method: 'POST', path: '/api/v1/networks', body, route: routes.createNetwork }]);
  });

  it('sends no body where the route takes none', async () => {
    const { sent, transport } = recording(() => ({ status: 200, body: { data: [] } }));
    await createClient(transport)(routes.adminJobs);
    expect(sent[0]).toEqual({ method: 'GET', path: '/api/v1/admin/jobs', route: routes.adminJobs });
  });

  it('with validate, checks the body against the schema of the status answered', async () => {
    const valid = createClient(recording(() => ({ status: 200, body: { ok: true, version: '1', ts: '2026-11-26T00:00:00Z' } })).transport, { validate: true });
    await expect(valid(routes.getHealth)).resolves.toEqual({ ok: true, version: '1', ts: '2026-11-26T00:00:00Z' });
    const wrong = createClient(recording(() => ({ status: 200, body: { ok: 'yes' } })).transport, { validate: true });
    await expect(wrong(routes.getHealth)).rejects.toThrow(/getHealth: unexpected answer from the server \(ok: /);
    const undocumented = createClient(recording(() => ({ status: 201, body: {} })).transport, { validate: true });
    await expect(undocumented(routes.getHealth)).rejects.toThrow('getHealth: the server answered 201, which the route does not document');
    const empty = createClient(recording(() => ({ status: 204, body: undefined })).transport, { validate: true });
    await expect(empty(routes.daemonPoll, { body: { waitSeconds: 1 } })).resolves.toBeUndefined();
  });

  it('is typed by the route: its response, its required params and body', () => {
    const call = createClient<{ signal?: AbortSignal }>(async () => ({ status: 200, body: undefined }));
    expectTypeOf(call(routes.listHosts, { query: { limit: 10 } })).resolves.toEqualTypeOf<z.output<(typeof collectionPages)['hosts']>>();
    expectTypeOf(call(routes.createNetwork, { body: { cidr: '10.0.0.0/8', name: 'x' } })).resolves.toEqualTypeOf<z.output<typeof Network>>();
    expectTypeOf(call(routes.logout)).resolves.toEqualTypeOf<undefined>();
    // @ts-expect-error a route with path parameters needs them
    void (() => call(routes.cancelScan));
    // @ts-expect-error the body is the route's request schema
    void (() => call(routes.createNetwork, { body: { cidr: 1 } }));
    // @ts-expect-error a query the route does not read
    void (() => call(routes.adminJobs, { query: { limit: 1 } }));
  });
});
