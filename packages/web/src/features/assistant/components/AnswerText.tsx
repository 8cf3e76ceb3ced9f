import type { ReactNode } from 'react';

// An answer's text as the model writes it: paragraphs with their line breaks, and the little
// Markdown models use (lists, fenced code, `code`, **bold**, # headings as bold lines), built as
// React elements: nothing the model writes is ever read as HTML. An answer still streaming may end
// inside a code block: the rest shows as code until the fence closes.

type Block = { kind: 'p'; lines: string[] } | { kind: 'ul' | 'ol'; items: string[] } | { kind: 'code'; text: string } | { kind: 'h'; text: string };

const BULLET = /^\s*[-*•]\s+(.*)$/;
const NUMBERED = /^\s*\d{1,3}[.)]\s+(.*)$/;
const HEADING = /^\s*#{1,6}\s+(.*)$/;
const FENCE = /^\s*```/;

/** The text's blocks, line by line. */
export function answerBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  let code: string[] | null = null;
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (code) {
      if (FENCE.test(line)) {
        blocks.push({ kind: 'code', text: code.join('\n') });
        code = null;
      } else code.push(line);
      continue;
    }
    if (FENCE.test(line)) {
      code = [];
      continue;
    }
    const last = blocks.at(-1);
    const bullet = BULLET.exec(line);
    const numbered = bullet ? null : NUMBERED.exec(line);
    const heading = HEADING.exec(line);
    if (line.trim() === '') blocks.push({ kind: 'p', lines: [] });
    else if (bullet || numbered) {
      const kind = bullet ? 'ul' : 'ol';
      const item = (bullet ?? numbered)![1]!;
      if (last?.kind === kind) last.items.push(item);
      else blocks.push({ kind, items: [item] });
    } else if (heading) blocks.push({ kind: 'h', text: heading[1]! });
    else if (last?.kind === 'p') last.lines.push(line);
    // A line under a list item, indented, continues the item.
    else if ((last?.kind === 'ul' || last?.kind === 'ol') && /^\s+\S/.test(line)) last.items[last.items.length - 1] += ` ${line.trim()}`;
    else blocks.push({ kind: 'p', lines: [line] });
  }
  if (code) blocks.push({ kind: 'code', text: code.join('\n') });
  return blocks.filter((b) => b.kind !== 'p' || b.lines.length > 0);
}

/** `code` and **bold** inside a line. */
function inline(text: string, at = ''): ReactNode[] {
  return text.split(/(`[^`\n]+`|\*\*[^*\n]+\*\*)/).map((part, i) => {
    if (part.length > 2 && part.startsWith('`') && part.endsWith('`')) return <code key={`${at}c${i}`}>{part.slice(1, -1)}</code>;
    if (part.length > 4 && part.startsWith('**') && part.endsWith('**')) return <strong key={`${at}b${i}`}>{part.slice(2, -2)}</strong>;
    return part;
  });
}

export function AnswerText({ text }: { text: string }) {
  return (
    <div className="answer-text">
      {answerBlocks(text).map((b, i) => {
        switch (b.kind) {
          case 'p':
            return <p key={i}>{b.lines.flatMap((l, j) => (j === 0 ? inline(l, `${j}`) : [<br key={`br${j}`} />, ...inline(l, `${j}`)]))}</p>;
          case 'h':
            return <p key={i}><strong>{inline(b.text)}</strong></p>;
          case 'code':
            return <pre key={i}><code>{b.text}</code></pre>;
          case 'ul':
            return <ul key={i}>{b.items.map((item, j) => <li key={j}>{inline(item)}</li>)}</ul>;
          case 'ol':
            return <ol key={i}>{b.items.map((item, j) => <li key={j}>{inline(item)}</li>)}</ol>;
        }
      })}
    </div>
  );
}
