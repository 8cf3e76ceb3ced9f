/** A failure, as the API's problem `detail` (or the error's message), announced to screen readers. */
export function ErrorAlert({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  return <p role="alert" className="alert">{message}</p>;
}
