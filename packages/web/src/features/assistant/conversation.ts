import { AI_MAX_BODY_BYTES, AI_MAX_MESSAGE_CHARS, AI_MAX_MESSAGES, type AiChatRequest, type AiDoneEvent, type AiToolEvent } from '@surveyor/contract';
import { useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError } from '../../lib/api';
import { askAssistant, assistantKeys } from './api';

// One conversation with the assistant, kept by the panel (which stays mounted while the user moves
// between pages). The server keeps nothing: each question sends the conversation so far, cut to
// what the API takes (40 messages of 8,000 characters, 128 KiB), the oldest left out first.

export type Context = NonNullable<AiChatRequest['context']>;

export interface Turn {
  id: number;
  question: string;
  /** The record the question was about, when one was attached. */
  context: Context | null;
  answer: string;
  tools: AiToolEvent[];
  done: AiDoneEvent | null;
  state: 'streaming' | 'done' | 'failed' | 'stopped';
  /** Why it failed: the problem's detail. */
  error: string | null;
  /** How long the answer was when the last tool ran (0: no text before it). */
  textBeforeTools?: number;
}

/** Room for the request's wrapper and context next to the messages. */
const BODY_MARGIN = 2048;
const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).length;

/**
 * The messages a new question sends: the earlier turns that have an answer (a turn that failed
 * before any text is left out, so questions and answers alternate), then the question. Answers
 * longer than a message may be are cut; the oldest messages go first when there are more than 40
 * or the body would pass 128 KiB, and the kept messages start with a question. `left` says how
 * many earlier messages were left out.
 */
export function requestMessages(turns: readonly Pick<Turn, 'question' | 'answer'>[], question: string): { messages: AiChatRequest['messages']; left: number } {
  const all: AiChatRequest['messages'] = turns.flatMap((t) =>
    t.answer.trim() === ''
      ? []
      : [
          { role: 'user' as const, content: t.question.slice(0, AI_MAX_MESSAGE_CHARS) },
          { role: 'assistant' as const, content: t.answer.slice(0, AI_MAX_MESSAGE_CHARS) },
        ],
  );
  all.push({ role: 'user', content: question.slice(0, AI_MAX_MESSAGE_CHARS) });
  let from = Math.max(0, all.length - AI_MAX_MESSAGES);
  while (from < all.length - 1 && (all[from]!.role !== 'user' || bytes(all.slice(from)) > AI_MAX_BODY_BYTES - BODY_MARGIN)) from += 1;
  return { messages: all.slice(from), left: from };
}

/** The conversation and its moves: ask, stop the answer streaming, try a failed question again, start over. */
export function useConversation() {
  const client = useQueryClient();
  const [turns, setTurns] = useState<Turn[]>([]);
  const [left, setLeft] = useState(0);
  const turnsRef = useRef(turns);
  turnsRef.current = turns;
  const running = useRef<AbortController | null>(null);
  const nextId = useRef(1);

  // Leaving the page (signing out) ends an answer still streaming.
  useEffect(() => () => running.current?.abort(), []);

  const update = useCallback((id: number, change: (t: Turn) => Partial<Turn>) => setTurns((ts) => ts.map((t) => (t.id === id ? { ...t, ...change(t) } : t))), []);

  const run = useCallback(
    async (id: number, history: readonly Turn[], question: string, context: Context | null) => {
      running.current?.abort();
      const controller = new AbortController();
      running.current = controller;
      const { messages, left: dropped } = requestMessages(history, question);
      setLeft(dropped);
      try {
        await askAssistant(
          { messages, ...(context ? { context } : {}) },
          {
            // Text the model wrote before asking for tools ("Let me look that up.") ends its paragraph there.
            delta: (text) => update(id, (t) => ({ answer: t.answer + (t.textBeforeTools && t.answer.length === t.textBeforeTools ? '\n\n' : '') + text })),
            tool: (event) => update(id, (t) => ({ tools: [...t.tools, event], textBeforeTools: t.answer.length })),
            done: (event) => update(id, () => ({ done: event, state: 'done' })),
          },
          controller.signal,
        );
      } catch (e) {
        if (controller.signal.aborted) update(id, () => ({ state: 'stopped' }));
        else {
          update(id, () => ({ state: 'failed', error: e instanceof Error ? e.message : String(e) }));
          // Not configured (any more): the panel says so from the status.
          if (e instanceof ApiError && e.code === 'service_unavailable') void client.invalidateQueries({ queryKey: assistantKeys.status });
        }
      } finally {
        if (running.current === controller) running.current = null;
      }
    },
    [client, update],
  );

  /** Asks `question`, about `context` when one is attached. */
  const ask = useCallback(
    (question: string, context: Context | null) => {
      const id = nextId.current++;
      const history = turnsRef.current;
      setTurns([...history, { id, question, context, answer: '', tools: [], done: null, state: 'streaming', error: null }]);
      void run(id, history, question, context);
    },
    [run],
  );

  /** Asks a turn that failed or was stopped again, in its place (the turns before it as history). */
  const retry = useCallback(
    (id: number) => {
      const at = turnsRef.current.findIndex((t) => t.id === id);
      const turn = turnsRef.current[at];
      if (!turn) return;
      update(id, () => ({ answer: '', tools: [], done: null, state: 'streaming', error: null, textBeforeTools: 0 }));
      void run(id, turnsRef.current.slice(0, at), turn.question, turn.context);
    },
    [run, update],
  );

  const stop = useCallback(() => running.current?.abort(), []);

  const clear = useCallback(() => {
    running.current?.abort();
    running.current = null;
    setTurns([]);
    setLeft(0);
  }, []);

  return { turns, left, streaming: turns.some((t) => t.state === 'streaming'), ask, retry, stop, clear };
}
