import { describe, expect, it } from 'vitest';
import { type RouteDef, generateOpenApi, routes } from '../src/index.js';

// Issue 18: every status a route can answer is in the document, with the problem codes of each.

type Json = Record<string, any>;
const doc = generateOpenApi(Object.values(routes) as RouteDef[], { version: 't', includeInternal: true }) as Json;
const codesOf = (path: string, method: string, status: number) => doc.paths[path]?.[method]?.responses?.[String(status)]?.['x-problem-codes'] as string[] | undefined;

describe('documented statuses', () => {
  it.each([
    ['/api/v1/networks', 'post', 409, ['duplicate']],
    ['/api/v1/networks', 'post', 404, ['not_found']],
    ['/api/v1/snapshots', 'post', 404, ['not_found']],
    ['/api/v1/scans', 'post', 404, ['not_found']],
    ['/api/v1/scans', 'post', 409, ['no_daemon_online', 'nmap_unavailable', 'scan_already_active']],
    ['/api/v1/scans/{id}/cancel', 'post', 409, ['conflict']],
    ['/api/v1/scans/{id}/cancel', 'post', 415, ['unsupported_media_type']],
    ['/api/v1/daemon/heartbeat', 'post', 404, ['not_found']],
    ['/api/v1/daemon/jobs/poll', 'post', 404, ['not_found']],
    ['/api/v1/daemon/flows', 'post', 404, ['not_found']],
    ['/api/v1/daemon/observations', 'post', 404, ['not_found']],
    ['/api/v1/daemon/observations', 'post', 409, ['session_cancelled']],
    ['/api/v1/auth/login', 'post', 401, ['unauthorized']],
    ['/api/v1/auth/logout', 'post', 401, ['unauthorized']],
    ['/api/v1/auth/keys', 'post', 403, ['csrf_failed']],
    ['/api/v1/admin/snapshot', 'post', 409, ['conflict']],
    ['/api/v1/hosts', 'get', 400, ['unknown_parameter', 'invalid_filter', 'limit_out_of_range', 'invalid_cursor']],
  ] as const)('%s %s answers %i with its codes', (path, method, status, codes) => {
    expect(codesOf(path, method, status)).toEqual(expect.arrayContaining([...codes]));
  });

  it('puts null in every nullable enum (OpenAPI 3.0.3: nullable does not widen an enum)', () => {
    const bad: string[] = [];
    const walk = (n: unknown, at: string) => {
      if (Array.isArray(n)) return n.forEach((x, i) => walk(x, `${at}/${i}`));
      if (!n || typeof n !== 'object') return;
      const o = n as Json;
      if (o.nullable === true && Array.isArray(o.enum) && !o.enum.includes(null)) bad.push(at);
      for (const [k, v] of Object.entries(o)) walk(v, `${at}/${k}`);
    };
    walk(doc, '#');
    expect(bad).toEqual([]);
    expect(JSON.stringify(doc)).toContain('"enum":["core","custom","nmap",null]');
  });
});
