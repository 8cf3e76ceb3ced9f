import { type RouteDef, generateOpenApi, problemCodes, routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { addRoute } from './route.js';

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** `/openapi.json` (generated from the contract) and `/problems` (every problem code). */
export function registerMetaRoutes(app: FastifyInstance, deps: { version: string; baseUrl: string; routeDefs: readonly RouteDef[] }): void {
  const document = generateOpenApi(deps.routeDefs, { version: deps.version, serverUrl: deps.baseUrl });
  addRoute(app, routes.getOpenApi, async () => document);

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
