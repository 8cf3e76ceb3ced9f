import { useId, useState } from 'react';
import type { z } from 'zod';

/**
 * Text fields checked by a contract schema as the user types. `toBody` turns the fields into the
 * request body, `schema` checks it as the server will; a field's first issue is shown under it
 * once the user has typed something into it (an empty field only keeps submit disabled).
 * `onEdit` runs on every change (to clear a previous answer).
 */
export function useCheckedFields<F extends string, S extends z.ZodType>(
  initial: Record<F, string>,
  toBody: (values: Record<F, string>) => unknown,
  schema: S,
  opts: { onEdit?: () => void; issueText?: (field: F, message: string) => string } = {},
) {
  const [values, setValues] = useState(initial);
  const [touched, setTouched] = useState<Set<F>>(new Set());
  const base = useId();
  const checked = schema.safeParse(toBody(values));
  const issues: Partial<Record<F, string>> = {};
  if (!checked.success) {
    for (const i of checked.error.issues) {
      const f = i.path[0] as F;
      issues[f] ??= opts.issueText ? opts.issueText(f, i.message) : i.message;
    }
  }
  const id = (f: F) => `${base}-${f}`;
  const shown = (f: F) => (touched.has(f) && values[f].trim() !== '' ? issues[f] : undefined);
  return {
    values,
    checked,
    id,
    /** The change handler of field `f`. */
    set: (f: F) => (e: { target: { value: string } }) => {
      setValues((v) => ({ ...v, [f]: e.target.value }));
      setTouched((t) => new Set(t).add(f));
      opts.onEdit?.();
    },
    reset: () => {
      setValues(initial);
      setTouched(new Set());
    },
    /** The input's id and, while an issue shows, aria-invalid and aria-describedby. */
    props: (f: F) => ({ id: id(f), ...(shown(f) ? { 'aria-invalid': true, 'aria-describedby': `${id(f)}-issue` } : {}) }),
    /** The issue under field `f`, or nothing. */
    issue: (f: F) => shown(f) && <span id={`${id(f)}-issue`} className="field-issue error-text">{shown(f)}</span>,
  };
}
