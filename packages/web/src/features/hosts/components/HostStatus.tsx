import { ago, dateTime } from '../../../lib/format';

/** A host's status: the word and, once gone, since when (exact time on hover). */
export function HostStatus({ goneAt }: { goneAt: string | null }) {
  if (!goneAt) return <span className="host-present">present</span>;
  return (
    <span className="host-gone">
      <span className="badge">gone</span> <time dateTime={goneAt} title={dateTime(goneAt)}>{ago(goneAt)}</time>
    </span>
  );
}
