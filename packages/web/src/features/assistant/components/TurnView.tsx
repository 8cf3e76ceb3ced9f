import type { AiCitation, AiDoneEvent, AiToolEvent } from '@surveyor/contract';
import { useState } from 'react';
import { Link } from 'react-router';
import { CopyButton } from '../../../components/Copy';
import { plural } from '../../../lib/format';
import type { Turn } from '../conversation';
import { contextWord } from '../pageContext';
import { AnswerText } from './AnswerText';

// One question and its answer: the text as it streams, the tools the assistant ran (folded), the
// records it used as links, a copy button and the tokens it took.

/** A tool's arguments on one line: `search: "web-01", limit: 10`. */
export function argumentsText(args: Record<string, unknown>): string {
  return Object.entries(args)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(', ');
}

export function ToolsUsed({ tools }: { tools: readonly AiToolEvent[] }) {
  const failed = tools.filter((t) => !t.ok).length;
  return (
    <details className="assistant-tools">
      <summary>
        Tools used ({tools.length}){failed > 0 && <span className="error-text">, {failed} failed</span>}
      </summary>
      <ul>
        {tools.map((t) => (
          <li key={t.id}>
            <code>{t.name}</code>
            {Object.keys(t.arguments).length > 0 && <span className="mono assistant-args"> {argumentsText(t.arguments)}</span>}
            <span className="assistant-tool-result">
              {t.ok ? <>{plural(t.rows, 'row')}{t.truncated && ', cut to its bound'}</> : <span className="error-text">failed</span>}
              {t.summary && <>: {t.summary}</>}
            </span>
          </li>
        ))}
      </ul>
    </details>
  );
}

const citationWord: Record<AiCitation['type'], string> = {
  host: 'Host',
  service: 'Service',
  vulnerability: 'Finding',
  certificate: 'Certificate',
  snapshot: 'Snapshot',
  daemon: 'Daemon',
  network: 'Network',
  scan: 'Scan',
};

/** A console path, never another site's address. */
const consolePath = (href: string) => href.startsWith('/') && !href.startsWith('//');

const SHOWN = 8;

export function Citations({ citations, onFollow }: { citations: readonly AiCitation[]; onFollow: () => void }) {
  const [all, setAll] = useState(false);
  const shown = all ? citations : citations.slice(0, SHOWN);
  return (
    <div className="assistant-sources">
      <p className="assistant-label">Records used</p>
      <ul>
        {shown.map((c) => (
          <li key={`${c.type}:${c.id}`}>
            <span className="muted">{citationWord[c.type]}</span>{' '}
            {consolePath(c.href) ? <Link to={c.href} onClick={onFollow}>{c.label}</Link> : c.label}
          </li>
        ))}
      </ul>
      {citations.length > SHOWN && !all && (
        <button type="button" className="link" onClick={() => setAll(true)}>Show all {citations.length}</button>
      )}
    </div>
  );
}

function Usage({ done }: { done: AiDoneEvent }) {
  const { promptTokens, completionTokens, totalTokens } = done.usage;
  return (
    <span className="hint" title={`${promptTokens.toLocaleString()} in, ${completionTokens.toLocaleString()} out; ${plural(done.rounds, 'call')} to ${done.model}`}>
      {totalTokens.toLocaleString()} tokens
    </span>
  );
}

export function TurnView({ turn, last, onRetry, onFollow }: { turn: Turn; last: boolean; onRetry: () => void; onFollow: () => void }) {
  const streaming = turn.state === 'streaming';
  const lastTool = turn.tools.at(-1);
  return (
    <article className="assistant-turn" aria-label={`You asked: ${turn.question.slice(0, 80)}`}>
      <div className="assistant-question">
        {turn.context && <p className="assistant-about">About {contextWord[turn.context.type]} {turn.context.label ?? turn.context.id}</p>}
        <p>{turn.question}</p>
      </div>
      <div className="assistant-answer" aria-busy={streaming}>
        {turn.answer !== '' && <AnswerText text={turn.answer} />}
        {streaming && turn.answer === '' && <p className="muted">{lastTool ? `Looking up (${lastTool.name})…` : 'Thinking…'}</p>}
        {turn.state === 'stopped' && <p className="hint">Stopped{turn.answer === '' ? ' before an answer.' : '.'}</p>}
        {turn.error && <p className="alert" role="alert">{turn.error}</p>}
        {turn.tools.length > 0 && <ToolsUsed tools={turn.tools} />}
        {turn.done && turn.done.citations.length > 0 && <Citations citations={turn.done.citations} onFollow={onFollow} />}
        {!streaming && (turn.answer !== '' || (last && turn.state !== 'done')) && (
          <div className="assistant-foot">
            {turn.answer !== '' && <CopyButton text={turn.answer} label="Copy answer" />}
            {last && (turn.state === 'failed' || turn.state === 'stopped') && <button type="button" onClick={onRetry}>Ask again</button>}
            {turn.done && <Usage done={turn.done} />}
          </div>
        )}
      </div>
    </article>
  );
}
