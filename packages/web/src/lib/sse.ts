// Server-sent events read from a fetch body (a POST answered as `text/event-stream`, which
// EventSource cannot send). Transport only: what an event means is its feature's to say.

/** One event: its name (`message` when the stream names none) and its data lines joined by newlines. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * The events of a `text/event-stream` body as they arrive, by the WHATWG parsing rules: a line ends
 * in CRLF, LF or CR; `event:` names the event, `data:` lines join with a newline, one space after
 * the colon is dropped; comments (`:`) and other fields are skipped; a blank line dispatches the
 * event, if it has data. A chunk may end anywhere: inside a line, between CR and LF, inside a
 * UTF-8 character. An event cut off by the end of the body is dropped. Leaving the loop early,
 * or `signal` aborting, cancels the body (the loop ends). Throws what reading throws.
 */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  // A fetch aborted errors its body; this ends a read waiting on any other stream too.
  const cancel = () => void reader.cancel().catch(() => {});
  signal?.addEventListener('abort', cancel, { once: true });
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let finished = false;
  try {
    while (!finished && !signal?.aborted) {
      const { value, done } = await reader.read();
      finished = done;
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (;;) {
        const at = buffer.search(/[\r\n]/);
        if (at === -1) break;
        // A CR last in the chunk may be the first half of a CRLF: wait for the next chunk.
        if (buffer[at] === '\r' && at === buffer.length - 1 && !done) break;
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + (buffer[at] === '\r' && buffer[at + 1] === '\n' ? 2 : 1));
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const raw = colon === -1 ? '' : line.slice(colon + 1);
        const text = raw.startsWith(' ') ? raw.slice(1) : raw;
        if (field === 'event') event = text;
        else if (field === 'data') data.push(text);
      }
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
