import { type AiChatRequest, AiDeltaEvent, AiDoneEvent, AiToolEvent, Problem, routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { ApiError, call, openStream } from '../../lib/api';
import { readServerSentEvents } from '../../lib/sse';

// The inventory assistant (issue 27): whether a provider answers here (GET /api/v1/ai/status), and
// one question asked (POST /api/v1/ai/chat), its answer read as server-sent events, each event's
// data parsed with the contract's schema.

export const assistantKeys = { status: ['assistant', 'status'] as const };

/** Whether the assistant is configured and which model answers; the configuration changes only with a restart. */
export const useAiStatus = () =>
  useQuery({ queryKey: assistantKeys.status, queryFn: ({ signal }) => call(routes.aiStatus, {}, { signal }), staleTime: 5 * 60_000 });

export interface AnswerHandlers {
  /** The next piece of the answer's text. */
  delta(text: string): void;
  /** A tool the assistant ran. */
  tool(event: AiToolEvent): void;
  /** The end: the records used and the token counts. */
  done(event: AiDoneEvent): void;
}

const garbled = () => new Error('The server sent a part of the answer the console cannot read. Ask again, or reload the page.');

function parse<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }, data: string): T {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw garbled();
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw garbled();
  return parsed.data;
}

/**
 * Asks the conversation's last question and reads the answer as it streams, calling `handlers`
 * for each event. Resolves after `done`. Throws ApiError with the problem's detail for a refusal
 * before the stream (503 not configured, 429, 502, 504, 400, 413) or an `error` event in it; an
 * Error when the stream ends without `done`; an AbortError when `signal` aborts.
 */
export async function askAssistant(body: AiChatRequest, handlers: AnswerHandlers, signal: AbortSignal): Promise<void> {
  const stream = await openStream(routes.aiChat, { body }, { signal });
  for await (const e of readServerSentEvents(stream, signal)) {
    if (e.event === 'delta') handlers.delta(parse(AiDeltaEvent, e.data).text);
    else if (e.event === 'tool') handlers.tool(parse(AiToolEvent, e.data));
    else if (e.event === 'done') {
      handlers.done(parse(AiDoneEvent, e.data));
      return;
    } else if (e.event === 'error') {
      const problem = parse(Problem.partial().required({ detail: true }), e.data);
      throw new ApiError(problem.status ?? 500, problem.detail, problem);
    }
  }
  throw new Error('The answer stopped before it finished: the connection to the server closed. Ask again.');
}
