import { z } from 'zod';
import { Text } from './common.js';

// The inventory assistant (spec 4.6 POST /api/v1/ai/chat; decisions.md: an OpenAI-compatible
// chat-completions provider with read-only tools). The answer streams as server-sent events, each
// `event: <name>` with `data: <JSON>` of the schemas below.

/** Most messages one conversation may send. */
export const AI_MAX_MESSAGES = 40;
/** Most characters one message may hold. */
export const AI_MAX_MESSAGE_CHARS = 8000;
/** Largest request body (the whole conversation): larger is 413. */
export const AI_MAX_BODY_BYTES = 131_072;

export const AiChatMessage = z.strictObject({
  role: z.enum(['user', 'assistant']),
  content: Text.min(1).max(AI_MAX_MESSAGE_CHARS),
});

/** What the console is showing, offered to the assistant as the conversation's starting point. */
export const AiChatContext = z.strictObject({
  type: z.enum(['host', 'vulnerability', 'service', 'snapshot', 'network', 'daemon', 'certificate']),
  id: Text.min(1).max(100).describe('The record\'s id (a host id, a finding id, a CVE id for `vulnerability`).'),
  label: Text.max(200).optional().describe('How the screen names it.'),
});

export const AiChatRequest = z.strictObject({
  messages: z
    .array(AiChatMessage)
    .min(1)
    .max(AI_MAX_MESSAGES)
    .refine((m) => m.at(-1)?.role === 'user', 'the last message must be the user\'s')
    .describe('The conversation so far, oldest first, ending with the user\'s question. The server keeps no conversation: send it whole each time.'),
  context: AiChatContext.optional(),
});
export type AiChatRequest = z.infer<typeof AiChatRequest>;

export const aiCitationTypes = ['host', 'service', 'vulnerability', 'certificate', 'snapshot', 'daemon', 'network', 'scan'] as const;

/** A record an answer used, with the console path that opens it. */
export const AiCitation = z.object({
  type: z.enum(aiCitationTypes),
  id: z.string(),
  label: z.string(),
  href: z.string().describe('The console path that opens the record (for example /hosts/{id}).'),
});
export type AiCitation = z.infer<typeof AiCitation>;

/** `event: delta`: the next piece of the answer's text. */
export const AiDeltaEvent = z.object({ text: z.string() });

/** `event: tool`: a tool the assistant ran, with what it gave back (its size, not its rows). */
export const AiToolEvent = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  ok: z.boolean(),
  rows: z.number().int().describe('Records the tool returned (after the bound).'),
  truncated: z.boolean().describe('True when the result was cut to its bound (rows or bytes) and summarised.'),
  summary: z.string().describe('One line: what was asked and found, or why it failed.'),
});
export type AiToolEvent = z.infer<typeof AiToolEvent>;

/** `event: done`: the end of the answer: the records it used, and the provider's token counts. */
export const AiDoneEvent = z.object({
  citations: z.array(AiCitation),
  usage: z.object({ promptTokens: z.number().int(), completionTokens: z.number().int(), totalTokens: z.number().int() }),
  rounds: z.number().int().describe('Provider calls made (a tool round each, and the answer).'),
  model: z.string(),
});
export type AiDoneEvent = z.infer<typeof AiDoneEvent>;

/** Whether the assistant can answer here (the console shows or explains its panel by it). */
export const AiStatus = z.object({
  configured: z.boolean(),
  model: z.string().nullable(),
  detail: z.string().describe('What the panel says when the assistant is not configured.'),
});

