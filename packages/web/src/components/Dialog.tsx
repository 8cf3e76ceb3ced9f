import { type FormEvent, type ReactNode, useEffect, useId, useRef } from 'react';

interface Props {
  title: string;
  children?: ReactNode;
  confirmLabel?: string;
  /** The dismissing button's label (default Cancel). */
  cancelLabel?: string;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}

/**
 * A modal `<dialog>` (focus stays inside, Escape cancels) with "Confirm" and "Cancel". Used to
 * confirm a revocation and to ask for a finding's optional note.
 */
export function Dialog({ title, children, confirmLabel = 'Confirm', cancelLabel = 'Cancel', busy, onConfirm, onCancel }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onConfirm();
  };
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <form onSubmit={submit}>
        <h2 id={titleId}>{title}</h2>
        {children}
        <div className="actions">
          <button type="submit" className="primary" disabled={busy}>{confirmLabel}</button>
          <button type="button" onClick={onCancel}>{cancelLabel}</button>
        </div>
      </form>
    </dialog>
  );
}
