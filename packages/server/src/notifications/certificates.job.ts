import { everyOrganisation } from '../jobs/per-organisation.js';
import type { JobDefinition } from '../jobs/runner.js';
import { announceExpiringCertificates } from './certificates.js';

/** notify.certificates (1 h): `tls.expiring` for every organisation's certificates that crossed a threshold. */
export function notifyCertificates(): JobDefinition {
  return {
    name: 'notify.certificates',
    intervalMs: 60 * 60_000,
    scope: 'organisation',
    run(ctx) {
      const at = ctx.now();
      return everyOrganisation(ctx, 'announced', async (org) => ({ detail: await announceExpiringCertificates(ctx.db, org, at) }), (d) => d.announced as number);
    },
  };
}
