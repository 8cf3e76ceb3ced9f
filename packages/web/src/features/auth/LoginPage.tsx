import { useMutation, useQueryClient } from '@tanstack/react-query';
import { zodResolver } from '@hookform/resolvers/zod';
import { LoginRequest } from '@surveyor/contract';
import { useEffect } from 'react';
import { useForm } from 'react-hook-form';
import { useNavigate, useSearchParams } from 'react-router';
import { setCsrfToken } from '../../lib/api';
import { signIn } from './api';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Field, errorAt, plainMessages, setServerIssues } from '../../components/form';
import { sessionKeys } from '../../lib/keys';

/** Only paths of this console, never another origin (`//evil.example`). */
export function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') ? next : '/';
}

export function LoginPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const client = useQueryClient();
  // The contract's own schema as the resolver: checked on submit, then as the user corrects.
  const form = useForm({ resolver: zodResolver(LoginRequest, plainMessages), defaultValues: { email: '', password: '' } });
  const { register, handleSubmit, formState: { errors } } = form;
  const next = safeNext(params.get('next'));

  useEffect(() => {
    document.title = 'Sign in · Surveyor';
  }, []);

  const login = useMutation({
    mutationFn: signIn,
    onSuccess: (me) => {
      setCsrfToken(me.csrfToken);
      client.setQueryData(sessionKeys.me, me);
      if (me.user.mustChangePassword) void navigate(`/password?next=${encodeURIComponent(next)}`, { replace: true });
      else void navigate(next, { replace: true });
    },
    onError: (e) => setServerIssues(e, form.setError, ['email', 'password']),
  });

  return (
    <main className="standalone">
      <p className="brand">Surveyor</p>
      <h1>Sign in</h1>
      {params.get('expired') && !login.error && <p className="notice" role="status">Your session has ended. Sign in again to continue.</p>}
      <form onSubmit={handleSubmit((b) => login.mutate(b), () => login.reset())} className="stack" noValidate>
        <Field label="Email" error={errorAt(errors, 'email')}>
          {(a) => <input {...a} type="email" autoComplete="username" {...register('email')} autoFocus />}
        </Field>
        <Field label="Password" error={errorAt(errors, 'password')}>
          {(a) => <input {...a} type="password" autoComplete="current-password" {...register('password')} />}
        </Field>
        <ErrorAlert error={login.error} />
        <button type="submit" className="primary" disabled={login.isPending}>Sign in</button>
      </form>
    </main>
  );
}
