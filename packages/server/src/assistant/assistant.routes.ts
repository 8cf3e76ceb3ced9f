import { AI_MAX_BODY_BYTES, problemCodes, routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import type { CursorCodec } from '../inventory/cursor.js';
import type { JobRunner } from '../jobs/runner.js';
import { recordTurn } from './assistant.repo.js';
import { NOT_CONFIGURED, type TurnReport, answer } from './chat.service.js';

/** POST /api/v1/ai/chat (streamed as server-sent events) and GET /api/v1/ai/status. */
export function registerAssistantRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; config: Config; cursors: CursorCodec; jobs: JobRunner }): void {
  const { db, config } = deps;

  addRoute(app, routes.aiStatus, async () => ({ configured: config.ai.provider !== null, model: config.ai.provider?.model ?? null, detail: config.ai.provider ? `Answers come from ${config.ai.provider.model}.` : NOT_CONFIGURED }));

  addRoute(
    app,
    routes.aiChat,
    async (request, reply) => {
      const p = sessionPrincipal(request);
      const provider = config.ai.provider;
      if (!provider) throw new AppError('service_unavailable', NOT_CONFIGURED);
      const begun = performance.now();
      const report: TurnReport = { outcome: 'ok', rounds: 0, tools: [], usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } };
      // The browser going away ends the provider's stream too.
      const abort = new AbortController();
      reply.raw.on('close', () => abort.abort());
      let started = false;
      const write = (event: string, data: unknown) => {
        if (!reply.raw.destroyed) reply.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      };
      let failure: AppError | null = null;
      try {
        const done = await answer(
          { provider, timeoutMs: config.ai.timeoutMs, maxToolRounds: config.ai.maxToolRounds, organisationName: p.organisationName, tools: { db, organisationId: p.organisationId, role: p.role, cursors: deps.cursors, jobs: deps.jobs.definitions } },
          request.body,
          {
            start() {
              started = true;
              reply.hijack();
              // No proxy may hold the stream back (nginx reads X-Accel-Buffering), and no compressor either.
              reply.raw.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no', 'X-Request-Id': request.id });
            },
            delta: (text) => write('delta', { text }),
            tool: (event) => write('tool', event),
          },
          abort.signal,
          report,
        );
        if (report.outcome === 'ok') write('done', done);
      } catch (e) {
        failure = e instanceof AppError ? e : new AppError('internal_error', 'An unexpected error occurred. Quote the requestId when reporting it.');
        if (!(e instanceof AppError)) request.log.error({ err: e }, 'assistant failed');
        if (!started) throw failure;
        const { status, title } = problemCodes[failure.code];
        write('error', { type: `${config.baseUrl}/problems#${failure.code}`, title, status, code: failure.code, detail: failure.message, requestId: request.id });
      } finally {
        const latencyMs = performance.now() - begun;
        const outcome = failure && !(['rate_limited', 'upstream_error', 'upstream_timeout'] as string[]).includes(failure.code) ? 'error' : report.outcome;
        // What a turn logs: its size, tools, latency and token counts (keys without "token", which the
        // logger redacts); never the conversation or the answer.
        request.log.info({ assistant: { messages: request.body.messages.length, chars: request.body.messages.reduce((n, m) => n + m.content.length, 0), context: request.body.context?.type ?? null, tools: report.tools, rounds: report.rounds, latencyMs: Math.round(latencyMs), usage: { prompt: report.usage.promptTokens, completion: report.usage.completionTokens, total: report.usage.totalTokens }, outcome } }, 'assistant turn');
        await recordTurn(db, p.organisationId, p.userId, { ...report, outcome, latencyMs }).catch((err: unknown) => request.log.error({ err }, 'could not record the assistant turn'));
        if (started) reply.raw.end();
      }
      return reply;
    },
    { bodyLimit: AI_MAX_BODY_BYTES },
  );
}
