import { type RouteBody, routes } from '@surveyor/contract';
import { call } from '../../lib/api';

/** Signs in (a wrong password is a 401 to show here, not an expired session to sign in from). */
export const signIn = (body: RouteBody<typeof routes.login>) => call(routes.login, { body }, { no401Redirect: true });

/** Changes the password, then reads the session again (the one-time password's limits are lifted). */
export async function changePassword(body: RouteBody<typeof routes.changePassword>) {
  await call(routes.changePassword, { body });
  return call(routes.me);
}
