/** A service the internet reaches, as a cloud account says (`exposedVia`): a badge saying why on hover and to screen readers. */
export function Exposure({ via }: { via: string | null }) {
  if (!via) return <span className="muted">—</span>;
  return (
    <span className="badge exposed" title={`Internet-exposed: ${via}`}>
      exposed<span className="sr-only">: {via}</span>
    </span>
  );
}
