import { zodResolver } from '@hookform/resolvers/zod';
import { type UseMutationResult, useMutation } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useId, useState } from 'react';
import { type DefaultValues, type FieldErrors, type FieldPath, type FieldValues, type Resolver, type UseFormReturn, type UseFormSetError, get, useForm } from 'react-hook-form';
import type { z } from 'zod';
import { ApiError } from '../lib/api';

// Forms are react-hook-form with the contract's own request schema as the resolver
// (`zodResolver(Schema, plainMessages)`), so what the API accepts is written once, in
// packages/contract. This file holds what every form shares: plain wording for zod's generic
// messages, a labelled field with its error, and the server's field errors put on their fields.

/** Plainer words than zod's defaults for the common cases; a message the contract sets itself wins (zod 4 precedence). */
function plainMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === 'too_small' || issue.code === 'too_big') {
    const n = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
    const bound = issue.code === 'too_small' ? 'at least' : 'at most';
    if (issue.origin === 'string') return issue.code === 'too_small' && n === 1 ? 'required' : `${bound} ${n} characters`;
    if (issue.origin === 'array') return issue.code === 'too_small' && n === 1 ? 'choose at least one' : `${bound} ${n}`;
    return `${bound} ${n}`;
  }
  if (issue.code === 'invalid_type' && issue.input === undefined) return 'required';
  if (issue.code === 'invalid_format' && issue.format === 'email') return 'not an email address';
  return undefined;
}

/** zodResolver's parse options for every form. */
export const plainMessages = { error: plainMessage };

// react-hook-form also passes a field's default value through setValueAs, so these take anything.
/** An input's text, trimmed. */
export const trimmed = (v: unknown): unknown => (typeof v === 'string' ? v.trim() : v);
/** A list typed into one input, separated by commas or spaces. */
export const listOf = (v: unknown): unknown => (typeof v === 'string' ? v.split(/[,\s]+/).filter(Boolean) : v);
/** An input's text as the request wants it: trimmed, and absent when empty (optional fields). */
export const optionalText = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);
/** A number input as the request wants it: absent when empty. */
export const optionalNumber = (v: unknown): number | undefined => (v === '' || v === undefined || v === null ? undefined : Number(v));

/** The first message at `name` or below it: `config.to` finds the error of `config.to.0`. */
export function errorAt(errors: FieldErrors, name: string): string | undefined {
  const first = (e: unknown): string | undefined => {
    if (!e || typeof e !== 'object') return undefined;
    const m = (e as { message?: unknown }).message;
    if (typeof m === 'string' && m) return m;
    for (const [k, v] of Object.entries(e)) if (k !== 'ref' && k !== 'message' && k !== 'type' && k !== 'types') {
      const found = first(v);
      if (found) return found;
    }
    return undefined;
  };
  return first(get(errors, name));
}

/** The a11y attributes a control gets from its Field. */
export interface FieldA11y {
  id: string;
  'aria-invalid'?: true;
  'aria-describedby'?: string;
}

/** A labelled control; while `error` is set the control is aria-invalid and described by the message under it. */
export function Field({ label, error, hint, children }: { label: string; error?: string | undefined; hint?: string; children: (a11y: FieldA11y) => ReactNode }) {
  const id = useId();
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const describedBy = [error ? errorId : null, hint ? hintId : null].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, ...(error ? { 'aria-invalid': true as const } : {}), ...(describedBy ? { 'aria-describedby': describedBy } : {}) })}
      {hint && <span id={hintId} className="hint">{hint}</span>}
      {error && <span id={errorId} className="field-error">{error}</span>}
    </div>
  );
}

/**
 * A 400 validation_failed names the offending fields in `issues` (paths like `body.cidr`,
 * `body.config.to.0`, or `scopes`): each message goes onto its field, the first one per field.
 * Returns whether any did. The problem's detail is still shown by the form's ErrorAlert.
 */
export function setServerIssues<T extends FieldValues>(error: unknown, setError: UseFormSetError<T>, fields: readonly FieldPath<T>[]): boolean {
  if (!(error instanceof ApiError) || error.status !== 400 || error.code !== 'validation_failed') return false;
  const done = new Set<string>();
  for (const issue of error.problem?.issues ?? []) {
    const path = issue.path.replace(/^body\./, '');
    const field = fields.find((f) => path === f || path.startsWith(`${f}.`));
    if (!field || done.has(field)) continue;
    done.add(field);
    setError(field, { type: 'server', message: issue.message }, { shouldFocus: done.size === 1 });
  }
  return done.size > 0;
}

export interface ContractFormOptions<In extends FieldValues, Out, R> {
  /** The contract's request schema: the form's resolver, so the form refuses what the API refuses. */
  schema: z.ZodType<Out, In>;
  defaultValues: DefaultValues<In>;
  /** `onChange` checks as the user types (submit stays disabled until valid); default: on submit. */
  mode?: 'onChange' | 'onSubmit';
  /** The call that sends the checked body. */
  submit: (body: Out) => Promise<R>;
  /** The fields a 400 `validation_failed` may name; each message goes onto its field. */
  fields: readonly FieldPath<In>[];
  /** After a success: invalidate, close a dialog, show what was created. */
  onSuccess?: (result: R) => void;
  /** Empty the form after a success (default), or keep what was typed. */
  reset?: boolean;
}

export interface ContractForm<In extends FieldValues, Out, R> {
  form: UseFormReturn<In, unknown, Out>;
  mutation: UseMutationResult<R, Error, Out>;
  /** For `<form onSubmit>`: checks, then sends. */
  onSubmit: (e?: FormEvent) => Promise<void>;
  /** The last success, until the user edits again. */
  done: R | null;
  /** For each control's `onChange`: editing clears the previous answer (success or refusal). */
  edited: () => void;
  /** A field's message once it holds text: an emptied field only keeps submit disabled. */
  shown: (field: FieldPath<In>) => string | undefined;
}

/**
 * The form pattern every create and edit screen shares: react-hook-form over the contract's schema,
 * one mutation sending the checked body, the server's field errors put on their fields, the result
 * kept until the next edit.
 */
export function useContractForm<In extends FieldValues, Out, R>(o: ContractFormOptions<In, Out, R>): ContractForm<In, Out, R> {
  const [done, setDone] = useState<R | null>(null);
  // The resolver's own generics cannot follow a schema passed through a generic helper: the types meet here once.
  const resolver = zodResolver(o.schema as never, plainMessages) as unknown as Resolver<In, unknown, Out>;
  const form = useForm<In, unknown, Out>({ resolver, mode: o.mode ?? 'onSubmit', defaultValues: o.defaultValues });
  const mutation = useMutation<R, Error, Out>({
    mutationFn: o.submit,
    onSuccess: (r) => {
      if (o.reset !== false) form.reset();
      setDone(r);
      o.onSuccess?.(r);
    },
    onError: (e) => setServerIssues(e, form.setError, o.fields),
  });
  const values = form.watch();
  return {
    form,
    mutation,
    onSubmit: form.handleSubmit((body) => mutation.mutate(body)),
    done,
    edited: () => {
      if (mutation.error) mutation.reset();
      setDone(null);
    },
    shown: (field) => {
      const v: unknown = get(values, field);
      return v === undefined || v === null || String(v).trim() === '' ? undefined : errorAt(form.formState.errors, field);
    },
  };
}
