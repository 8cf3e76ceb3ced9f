import type { ReactNode } from 'react';
import { Link } from 'react-router';

/** One figure of a row of figures (`<ul className="figures">`): a number, its label, a hint; a link to what it counts. */
export function Figure({ label, value, to, tone, hint }: { label: string; value: ReactNode; to?: string; tone?: string; hint?: string }) {
  const body = (
    <>
      <span className="figure-value">{value}</span>
      <span className="figure-label">{label}</span>
      {hint && <span className="figure-hint">{hint}</span>}
    </>
  );
  return <li className={`figure ${tone ?? ''}`}>{to ? <Link to={to}>{body}</Link> : <div>{body}</div>}</li>;
}
