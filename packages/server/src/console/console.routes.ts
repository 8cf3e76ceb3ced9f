import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { routes } from '@surveyor/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { addRoute } from '../http/route.js';
import type { WebDeps } from '../module.js';

/** packages/web/dist, the same from src/console and dist/console. */
export const defaultConsoleDir = fileURLToPath(new URL('../../../web/dist/', import.meta.url));

/**
 * What the console's page may load and reach: its own files and API only (no inline script, no
 * other origin), never framed.
 */
const PAGE_HEADERS = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  // The page names hashed assets: it is checked again on every load, the assets never.
  'Cache-Control': 'no-cache',
};

/** Paths that are never console pages: the API and the service's own documents. */
const NOT_PAGES = /^\/(?:api(?:\/|$)|openapi\.json$|problems$|assets\/)/;

/**
 * The web console (issue 14): `/` and every client-side route answer its index.html to a browser
 * asking for HTML; `/assets/*` are its hashed files, cached for a year. Anything else falls through
 * to the not-found handler (the API's 404 and 405 stay as they were).
 */
export function registerConsoleRoutes(app: FastifyInstance, { config }: Pick<WebDeps, 'config'>): void {
  const root = path.resolve(config.consoleDir ?? defaultConsoleDir);
  // Not awaited: awaiting a plugin here would load the routes registered so far before the app's
  // error handler is set, and they would answer errors with Fastify's default instead of problems.
  void app.register(fastifyStatic, { root, serve: false, index: false });
  const page = (reply: FastifyReply) => {
    if (!existsSync(path.join(root, 'index.html'))) {
      throw new AppError('service_unavailable', `The web console is not built (no index.html in ${root}): run npm run build, or set SERVICE_CONSOLE_DIR.`);
    }
    return reply.headers(PAGE_HEADERS).type('text/html; charset=utf-8').sendFile('index.html', root, { cacheControl: false });
  };
  const wantsPage = (request: FastifyRequest) => !NOT_PAGES.test(request.url.split('?')[0]!) && /\btext\/html\b/.test(request.headers.accept ?? '');

  addRoute(app, routes.consoleIndex, async (_request, reply) => page(reply));
  addRoute(app, routes.consolePage, async (request, reply) => (wantsPage(request) ? page(reply) : reply.callNotFound()));
  addRoute(app, routes.consoleAsset, async (request, reply) => {
    const file = (request.params as unknown as Record<string, string | undefined>)['*'];
    if (!file || file.split('/').some((s) => s === '..' || s === '') || !existsSync(path.join(root, 'assets', file))) {
      throw new AppError('not_found', `No console file assets/${file}.`);
    }
    return reply.header('X-Content-Type-Options', 'nosniff').sendFile(path.join('assets', file), root, { maxAge: 365 * 86_400_000, immutable: true });
  });
}
