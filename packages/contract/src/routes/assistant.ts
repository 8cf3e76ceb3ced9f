import { AiChatRequest, AiStatus } from '../assistant.js';
import { type RouteDef, route } from '../route-def.js';

/** The inventory assistant (spec 4.6). */
export const assistantRoutes = {
  aiChat: route({
    method: 'POST',
    url: '/api/v1/ai/chat',
    operationId: 'aiChat',
    summary: 'Ask the inventory assistant; the answer streams as server-sent events',
    description:
      'Session only (an API key is 401), any role: the tools only read, within the organisation, what a viewer may read. ' +
      'The answer is `text/event-stream`: `event: delta` `{text}` pieces of the answer, `event: tool` for each tool run (`AiToolEvent`), ' +
      'and `event: done` with the citations (records used, with console links) and token usage; a failure after the stream began is `event: error` with a problem body. ' +
      'Before the stream begins: 503 `service_unavailable` when no provider is configured (SERVICE_AI_BASE_URL, SERVICE_AI_API_KEY, SERVICE_AI_MODEL), ' +
      '429 `rate_limited` with the provider\'s `Retry-After`, 502 `upstream_error` when the provider fails, 504 `upstream_timeout` when it does not answer in time; ' +
      'a conversation over 40 messages or 8,000 characters a message is 400, over 128 KiB 413.',
    tags: ['assistant'],
    internal: true,
    auth: { kind: 'session' },
    body: AiChatRequest,
    errors: ['service_unavailable', 'upstream_error', 'upstream_timeout', 'rate_limited', 'payload_too_large'],
    response: { 200: null },
    produces: 'text/event-stream',
  }),
  aiStatus: route({
    method: 'GET',
    url: '/api/v1/ai/status',
    operationId: 'aiStatus',
    summary: 'Whether the assistant is configured, and which model answers',
    tags: ['assistant'],
    internal: true,
    auth: { kind: 'session' },
    response: { 200: AiStatus },
  }),
} as const satisfies Record<string, RouteDef>;
