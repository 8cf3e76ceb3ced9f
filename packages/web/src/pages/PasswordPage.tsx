import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ChangePasswordRequest } from '@surveyor/contract';
import { type FormEvent, useEffect, useState } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { ApiError, api, setCsrfToken } from '../api';
import { ErrorAlert } from '../components/ErrorAlert';
import { meKey, useMe } from '../queries';
import type { SessionInfo } from '../types';
import { safeNext } from './LoginPage';

export function PasswordPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const client = useQueryClient();
  const me = useMe();
  const [currentPassword, setCurrent] = useState('');
  const [newPassword, setNew] = useState('');
  const [invalid, setInvalid] = useState<string | null>(null);
  const next = safeNext(params.get('next'));

  useEffect(() => {
    document.title = 'Change password · Surveyor';
    if (me.data) setCsrfToken(me.data.csrfToken);
  }, [me.data]);

  const change = useMutation({
    mutationFn: async () => {
      await api<void>('/api/v1/auth/password', { method: 'POST', body: { currentPassword, newPassword } });
      return api<SessionInfo>('/api/v1/auth/me');
    },
    onSuccess: (info) => {
      client.setQueryData(meKey, info);
      setCsrfToken(info.csrfToken);
      void navigate(next, { replace: true });
    },
  });

  if (me.error instanceof ApiError && me.error.status === 401) return <Navigate to={`/login?next=${encodeURIComponent('/password')}`} replace />;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const checked = ChangePasswordRequest.safeParse({ currentPassword, newPassword });
    if (!checked.success) {
      const issue = checked.error.issues[0];
      setInvalid(issue ? `${issue.path.join('.') === 'newPassword' ? 'New password' : 'Current password'}: ${issue.message}` : 'Check the fields.');
      return;
    }
    if (newPassword === currentPassword) {
      setInvalid('The new password must differ from the current one.');
      return;
    }
    setInvalid(null);
    change.mutate();
  };

  return (
    <main className="standalone">
      <p className="brand">Surveyor</p>
      <h1>Change password</h1>
      {me.data?.user.mustChangePassword && (
        <p className="notice">You signed in with a one-time password. Choose your own (at least 12 characters) to continue.</p>
      )}
      <form onSubmit={submit} className="stack">
        <label>
          Current password
          <input type="password" autoComplete="current-password" required value={currentPassword} onChange={(e) => setCurrent(e.target.value)} autoFocus />
        </label>
        <label>
          New password
          <input type="password" autoComplete="new-password" required value={newPassword} onChange={(e) => setNew(e.target.value)} />
        </label>
        {invalid ? <p role="alert" className="alert">{invalid}</p> : <ErrorAlert error={change.error} />}
        <button type="submit" className="primary" disabled={change.isPending}>Change password</button>
      </form>
    </main>
  );
}
