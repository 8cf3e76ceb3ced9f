import { createHash } from 'node:crypto';
import zlib, { brotliCompressSync, gzipSync } from 'node:zlib';
import { type RouteDef, generateOpenApi, problemCodes, routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { addRoute } from './route.js';

/** RFC 9110 13.1.2: If-None-Match compares weakly; `*` matches any current representation. */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const opaque = (t: string) => t.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((t) => t.trim() === '*' || opaque(t) === opaque(etag));
}

function lazy<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

/** br, else gzip, else identity, from Accept-Encoding (an encoding with q=0 is refused). */
export function preferredEncoding(acceptEncoding: string | undefined): 'br' | 'gzip' | 'identity' {
  const accepted = new Map<string, number>();
  for (const part of (acceptEncoding ?? '').split(',')) {
    const [name, ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    if (name) accepted.set(name, q ? Number(q.slice(2)) || 0 : 1);
  }
  const ok = (e: string) => (accepted.get(e) ?? accepted.get('*') ?? 0) > 0;
  return ok('br') ? 'br' : ok('gzip') ? 'gzip' : 'identity';
}

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** `/openapi.json` (generated from the contract) and `/problems` (every problem code). */
export function registerMetaRoutes(app: FastifyInstance, deps: { version: string; baseUrl: string; routeDefs: readonly RouteDef[] }): void {
  const document = generateOpenApi(deps.routeDefs, { version: deps.version, serverUrl: deps.baseUrl });
  // The document (117 KB) changes only with a release: it is serialised and compressed once (at
  // the first request, at the best ratio), and clients revalidate it with its ETag (weak: the
  // same document is sent in three encodings).
  const text = Buffer.from(JSON.stringify(document));
  const etag = `W/"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;
  const encoded = { br: lazy(() => brotliCompressSync(text, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: text.length } })), gzip: lazy(() => gzipSync(text, { level: 9 })) };
  addRoute(app, routes.getOpenApi, async (request, reply) => {
    reply.header('ETag', etag).header('Cache-Control', 'no-cache').header('Vary', 'Accept-Encoding');
    if (matches(request.headers['if-none-match'], etag)) return reply.code(304).send();
    const encoding = preferredEncoding(request.headers['accept-encoding']);
    reply.type('application/json; charset=utf-8');
    if (encoding === 'identity') return reply.send(text);
    return reply.header('Content-Encoding', encoding).send(encoded[encoding]());
  });

  const list = Object.entries(problemCodes).map(([code, p]) => ({ code, status: p.status, title: p.title, description: p.description, type: `${deps.baseUrl}/problems#${code}` }));
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Surveyor problem codes</title>
<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}dt{font-weight:600;margin-top:1rem}code{background:#f3f3f3;padding:0 .2rem}</style></head>
<body><h1>Problem codes</h1><p>Every error is an RFC 9457 problem (<code>application/problem+json</code>). Branch on <code>code</code>, not on <code>detail</code>.</p><dl>
${list.map((p) => `<dt id="${p.code}"><code>${p.code}</code> · ${p.status} ${escape(p.title)}</dt><dd>${escape(p.description).replace(/`([^`]+)`/g, '<code>$1</code>')}</dd>`).join('\n')}
</dl></body></html>`;
  addRoute(app, routes.listProblems, async (request, reply) => {
    if (/application\/json/.test(request.headers.accept ?? '') && !/text\/html/.test(request.headers.accept ?? '')) return reply.type('application/json').send({ problems: list });
    return reply.type('text/html; charset=utf-8').send(html);
  });
}
