import { type Role, roleAtLeast } from '@surveyor/contract';
import type { ReactNode } from 'react';
import { useMe } from '../lib/queries';
import { usePageTitle } from '../lib/usePageTitle';

/**
 * A screen only `min` and above may use: others see its title and who may, never a form they
 * cannot submit nor the 403 of its calls (the screen's hooks do not even run).
 */
export function RoleGate({ min, title, why, children }: { min: Role; title: string; why: string; children: ReactNode }) {
  usePageTitle(title);
  const me = useMe();
  if (!me.data) return null;
  if (roleAtLeast(me.data.role, min)) return <>{children}</>;
  return (
    <>
      <h1>{title}</h1>
      <p className="empty">{why} You are {me.data.role}.</p>
    </>
  );
}
