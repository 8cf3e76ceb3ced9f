import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { api, setCsrfToken } from '../api';
import { ErrorAlert } from '../components/ErrorAlert';
import { meKey } from '../queries';
import type { SessionInfo } from '../types';

/** Only paths of this console, never another origin (`//evil.example`). */
export function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') ? next : '/';
}

export function LoginPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const client = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const next = safeNext(params.get('next'));

  useEffect(() => {
    document.title = 'Sign in · Surveyor';
  }, []);

  const login = useMutation({
    mutationFn: () => api<SessionInfo>('/api/v1/auth/login', { method: 'POST', body: { email, password }, no401Redirect: true }),
    onSuccess: (me) => {
      setCsrfToken(me.csrfToken);
      client.setQueryData(meKey, me);
      if (me.user.mustChangePassword) void navigate(`/password?next=${encodeURIComponent(next)}`, { replace: true });
      else void navigate(next, { replace: true });
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    login.mutate();
  };

  return (
    <main className="standalone">
      <p className="brand">Surveyor</p>
      <h1>Sign in</h1>
      {params.get('expired') && !login.error && <p className="notice" role="status">Your session has ended. Sign in again to continue.</p>}
      <form onSubmit={submit} className="stack">
        <label>
          Email
          <input type="email" name="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} autoFocus />
        </label>
        <label>
          Password
          <input type="password" name="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        </label>
        <ErrorAlert error={login.error} />
        <button type="submit" className="primary" disabled={login.isPending}>Sign in</button>
      </form>
    </main>
  );
}
