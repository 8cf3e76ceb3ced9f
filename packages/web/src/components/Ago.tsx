import { ago, dateTime } from '../lib/format';

/** A time as "3 min ago", the exact time on hover; `never` (muted) when there is none. */
export function Ago({ at, never = '—' }: { at: string | null | undefined; never?: string }) {
  if (!at) return <span className="muted">{never}</span>;
  return (
    <time className="nowrap" dateTime={at} title={dateTime(at)}>
      {ago(at)}
    </time>
  );
}
