import { type FormEvent, type KeyboardEvent, type ReactNode, useEffect, useId, useRef } from 'react';
import { returnFocus, trapTab } from './focus';

interface Props {
  title: string;
  children?: ReactNode;
  /** The confirming button, named by its action ("Delete network", "Make editor"): never "OK", "Confirm" or "Yes". */
  confirmLabel: string;
  /** The dismissing button's label (default Cancel). */
  cancelLabel?: string;
  busy?: boolean;
  /** Confirming destroys something (revoke, remove, delete, cancel a scan): focus starts on the dismissing button, so Enter does no harm. */
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}

/**
 * A modal `<dialog>` with a button named by its action and "Cancel". Opening moves focus into it (its first field, or
 * Confirm; Cancel for a `danger` dialog); Tab and Shift+Tab go round inside it; Escape cancels; closing gives focus back to the
 * control that opened it (or to the page's main region when that control is gone). Used to confirm
 * a revocation and to ask for a finding's optional note.
 */
export function Dialog({ title, children, confirmLabel, cancelLabel = 'Cancel', busy, danger, onConfirm, onCancel }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const cancelRef = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    const opener = document.activeElement;
    if (d && !d.open) d.showModal();
    // showModal focuses the first control; React keeps autoFocus out of the DOM, so move it here.
    if (danger) cancelRef.current?.focus();
    return () => {
      d?.close();
      returnFocus(opener);
    };
  }, []);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onConfirm();
  };
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      aria-modal="true"
      onKeyDown={(e: KeyboardEvent<HTMLDialogElement>) => trapTab(e)}
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <form onSubmit={submit}>
        <h2 id={titleId}>{title}</h2>
        {children}
        <div className="actions">
          <button type="submit" className={danger ? 'primary danger-fill' : 'primary'} disabled={busy}>{confirmLabel}</button>
          <button ref={cancelRef} type="button" onClick={onCancel}>{cancelLabel}</button>
        </div>
      </form>
    </dialog>
  );
}
