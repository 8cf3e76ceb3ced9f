import { type KeyboardEvent, useEffect, useId, useLayoutEffect, useRef, useState } from 'react';
import { AI_MAX_MESSAGE_CHARS } from '@surveyor/contract';
import { ErrorAlert } from '../../components/ErrorAlert';
import { useAiStatus } from './api';
import { TurnView } from './components/TurnView';
import { type Context, useConversation } from './conversation';
import { contextWord, starterQuestion, usePageContext } from './pageContext';

// The inventory assistant's side panel (issue 27), opened from the header on every screen. It stays
// mounted once opened, hidden when closed, so the conversation (and an answer still streaming)
// survives moving between pages. Without a provider it explains what to configure instead.

const EXAMPLES = ['Which hosts run OpenSSH older than 9.3?', 'Which certificates expire in the next 30 days?', 'Which daemons went quiet this week?'];

/** The detail's SERVICE_AI_* variable names set as code. */
function Explained({ text }: { text: string }) {
  return <>{text.split(/(SERVICE_AI_[A-Z_]+)/).map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part))}</>;
}

/** On a narrow screen the panel covers the page: following a link closes it so the page shows. */
const covers = () => window.matchMedia?.('(max-width: 900px)').matches ?? false;

export function AssistantPanel({ open, onClose }: { open: boolean; onClose: (returnFocus: boolean) => void }) {
  const headingId = useId();
  const inputId = useId();
  const status = useAiStatus();
  const { turns, left, streaming, ask, retry, stop, clear } = useConversation();
  const page = usePageContext();
  const [context, setContext] = useState<Context | null>(null);
  const [text, setText] = useState('');
  const heading = useRef<HTMLHeadingElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const log = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  const configured = status.data?.configured === true;

  // Opening puts focus in the question box (or on the heading when there is none to type in).
  useEffect(() => {
    if (!open) return;
    (input.current ?? heading.current)?.focus();
  }, [open, configured]);

  // The newest text stays in view while it streams, unless the user scrolled up to read.
  useLayoutEffect(() => {
    if (pinned.current && log.current) log.current.scrollTop = log.current.scrollHeight;
  }, [turns]);

  const send = (e?: { preventDefault(): void }) => {
    e?.preventDefault();
    const question = text.trim();
    if (!question || streaming) return;
    pinned.current = true;
    ask(question, context);
    setText('');
  };

  const keyDown = (e: KeyboardEvent<HTMLElement>) => {
    if (e.key !== 'Escape' || e.defaultPrevented) return;
    e.preventDefault();
    onClose(true);
  };

  const offerAbout = (c: Context) => {
    setContext(c);
    setText(starterQuestion(c));
    requestAnimationFrame(() => input.current?.select());
  };

  const startOver = () => {
    clear();
    setContext(null);
    setText('');
    input.current?.focus();
  };

  const follow = () => {
    if (covers()) onClose(false);
  };

  const offer = page && (context?.type !== page.type || context.id !== page.id) ? page : null;

  return (
    <aside id="assistant-panel" className="assistant" aria-labelledby={headingId} hidden={!open} onKeyDown={keyDown}>
      <div className="assistant-head">
        <h2 id={headingId} ref={heading} tabIndex={-1}>Assistant</h2>
        {turns.length > 0 && <button type="button" className="small" onClick={startOver}>New conversation</button>}
        <button type="button" className="small" onClick={() => onClose(true)} aria-label="Close the assistant" title="Close the assistant (Esc)">×</button>
      </div>
      {status.isPending && <p className="loading">Loading…</p>}
      <ErrorAlert error={status.error} />
      {status.data && !configured && (
        <div className="assistant-body">
          <p className="notice">The assistant is not set up on this server.</p>
          <p><Explained text={status.data.detail} /></p>
          <p className="hint">Once it is, ask about the inventory in plain words here, on any page: answers name the hosts, services and findings they come from, with links.</p>
        </div>
      )}
      {configured && (
        <>
          <div
            className="assistant-log"
            ref={log}
            onScroll={(e) => {
              const el = e.currentTarget;
              pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
            }}
          >
            {turns.length === 0 && (
              <div className="assistant-intro">
                <p>Ask about this organisation's inventory: hosts, services, findings, certificates, daemons, scans and snapshots. The assistant reads only what you may read and names the records it used.</p>
                <ul className="assistant-examples">
                  {EXAMPLES.map((q) => (
                    <li key={q}>
                      <button type="button" className="link" onClick={() => { setText(q); input.current?.focus(); }}>{q}</button>
                    </li>
                  ))}
                </ul>
                <p className="hint">Answers come from {status.data?.model}; check what matters on the linked pages.</p>
              </div>
            )}
            {left > 0 && <p className="hint">The first {left} messages are no longer sent: the assistant reads the most recent part of a long conversation.</p>}
            {turns.map((t, i) => <TurnView key={t.id} turn={t} last={i === turns.length - 1} onRetry={() => retry(t.id)} onFollow={follow} />)}
          </div>
          <p className="sr-only" role="status">{streaming ? 'Answering…' : turns.at(-1)?.state === 'done' ? 'Answer complete.' : ''}</p>
          <form className="assistant-ask" onSubmit={send}>
            {offer && (
              <button type="button" className="link assistant-offer" onClick={() => offerAbout(offer)}>
                Ask about {offer.label ?? offer.id}
              </button>
            )}
            {context && (
              <p className="assistant-context">
                <span>About {contextWord[context.type]} <strong>{context.label ?? context.id}</strong></span>
                <button type="button" className="small" onClick={() => setContext(null)} aria-label={`Stop asking about ${context.label ?? context.id}`} title="Ask without it">×</button>
              </p>
            )}
            <label htmlFor={inputId} className="sr-only">Question</label>
            <textarea
              id={inputId}
              ref={input}
              rows={3}
              maxLength={AI_MAX_MESSAGE_CHARS}
              value={text}
              placeholder="Ask about hosts, services, findings…"
              onChange={(e) => setText(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) send(e);
              }}
            />
            <div className="assistant-actions">
              {streaming ? (
                <button type="button" onClick={stop}>Stop</button>
              ) : (
                <button type="submit" className="primary" disabled={text.trim() === ''}>Ask</button>
              )}
              <span className="hint">Enter asks; Shift+Enter starts a new line</span>
            </div>
          </form>
        </>
      )}
    </aside>
  );
}
