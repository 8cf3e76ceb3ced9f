import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ChangePasswordRequest } from '@surveyor/contract';
import { zodResolver } from '@hookform/resolvers/zod';
import { useEffect } from 'react';
import { useForm } from 'react-hook-form';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { ApiError, setCsrfToken } from '../../lib/api';
import { changePassword } from './api';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Field, errorAt, plainMessages, setServerIssues } from '../../components/form';
import { sessionKeys } from '../../lib/keys';
import { useMe } from '../../lib/queries';
import { safeNext } from './LoginPage';

const NewPassword = ChangePasswordRequest.refine((b) => b.newPassword !== b.currentPassword, { path: ['newPassword'], message: 'must differ from the current password' });

export function PasswordPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const client = useQueryClient();
  const me = useMe();
  // The contract's own schema as the resolver (checked on submit, then as the user corrects), plus
  // one rule of this page: a new password that is the old one is no change.
  const form = useForm({ resolver: zodResolver(NewPassword, plainMessages), defaultValues: { currentPassword: '', newPassword: '' } });
  const { register, handleSubmit, formState: { errors } } = form;
  const next = safeNext(params.get('next'));

  useEffect(() => {
    document.title = 'Change password · Surveyor';
    if (me.data) setCsrfToken(me.data.csrfToken);
  }, [me.data]);

  const change = useMutation({
    mutationFn: changePassword,
    onSuccess: (info) => {
      client.setQueryData(sessionKeys.me, info);
      setCsrfToken(info.csrfToken);
      void navigate(next, { replace: true });
    },
    // A wrong current password is a 400 naming body.currentPassword: shown under that field.
    onError: (e) => setServerIssues(e, form.setError, ['currentPassword', 'newPassword']),
  });

  if (me.error instanceof ApiError && me.error.status === 401) return <Navigate to={`/login?next=${encodeURIComponent('/password')}`} replace />;

  return (
    <main className="standalone">
      <p className="brand">Surveyor</p>
      <h1>Change password</h1>
      {me.data?.user.mustChangePassword && (
        <p className="notice">You signed in with a one-time password. Choose your own (at least 12 characters) to continue.</p>
      )}
      <form onSubmit={handleSubmit((b) => change.mutate(b), () => change.reset())} className="stack" noValidate>
        <Field label="Current password" error={errorAt(errors, 'currentPassword')}>
          {(a) => <input {...a} type="password" autoComplete="current-password" {...register('currentPassword')} autoFocus />}
        </Field>
        <Field label="New password" error={errorAt(errors, 'newPassword')} hint="At least 12 characters.">
          {(a) => <input {...a} type="password" autoComplete="new-password" {...register('newPassword')} />}
        </Field>
        <ErrorAlert error={change.error} />
        <button type="submit" className="primary" disabled={change.isPending}>Change password</button>
      </form>
    </main>
  );
}
