import { describe, expect, it } from 'vitest';
import { type RouteDef, generateOpenApi, routes } from '../src/index.js';

// Issue 18: resources are named and referenced; headers, tags, contact and licence are declared.

type Json = Record<string, any>;
const doc = generateOpenApi(Object.values(routes) as RouteDef[], { version: 't', serverUrl: 'https://surveyor.example' }) as Json;
const ok = (path: string, method: string, status = 200) => doc.paths[path][method].responses[String(status)];

describe('the public document', () => {
  it('names every resource and page envelope in components.schemas and references them', () => {
    const names = Object.keys(doc.components.schemas);
    for (const n of ['Problem', 'Host', 'Address', 'Service', 'Network', 'Site', 'Certificate', 'Vulnerability', 'Snapshot', 'Topology', 'ScanSession', 'Daemon', 'Job', 'HostPage', 'ServicePage', 'NetworkPage', 'SitePage', 'CertificatePage', 'VulnerabilityPage', 'SnapshotPage', 'TopologyPage']) {
      expect(names).toContain(n);
    }
    expect(ok('/api/v1/hosts', 'get').content['application/json'].schema).toEqual({ $ref: '#/components/schemas/HostPage' });
    expect(doc.components.schemas.HostPage.properties.data.items).toEqual({ $ref: '#/components/schemas/Host' });
    expect(ok('/api/v1/networks', 'post', 201).content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Network' });
    expect(ok('/api/v1/scans/{id}', 'get').content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ScanSession' });
    // Every reference resolves.
    for (const ref of JSON.stringify(doc).match(/#\/components\/[a-zA-Z]+\/[A-Za-z-]+/g) ?? []) {
      const [, , kind, name] = ref.split('/');
      expect(doc.components[kind!]?.[name!], ref).toBeDefined();
    }
  });

  it('declares X-Daemon-ID on the daemon calls and X-Request-Id, RateLimit-* and Retry-After on responses', () => {
    for (const path of ['/api/v1/daemon/heartbeat', '/api/v1/daemon/jobs/poll', '/api/v1/daemon/observations', '/api/v1/daemon/flows']) {
      expect(doc.paths[path].post.parameters).toContainEqual(expect.objectContaining({ name: 'X-Daemon-ID', in: 'header', required: true }));
    }
    expect(doc.paths['/api/v1/daemon/register'].post.parameters ?? []).not.toContainEqual(expect.objectContaining({ name: 'X-Daemon-ID' }));
    expect(Object.keys(ok('/api/v1/hosts', 'get').headers)).toEqual(expect.arrayContaining(['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']));
    expect(Object.keys(ok('/api/v1/hosts', 'get', 429).headers)).toContain('Retry-After');
    expect(Object.keys(ok('/api/health', 'get').headers)).toEqual(['X-Request-Id']);
  });

  it('has described top-level tags, a contact and a licence, and names codes instead of citing the spec', () => {
    expect(doc.tags.map((t: Json) => t.name)).toEqual(['health', 'inventory', 'scans', 'daemon', 'metrics']);
    for (const t of doc.tags) expect(t.description, t.name).toBeTruthy();
    expect(doc.info.contact.name).toBeTruthy();
    expect(doc.info.license.name).toBeTruthy();
    expect(JSON.stringify(doc)).not.toMatch(/spec \d|decisions\.md/);
  });
});
