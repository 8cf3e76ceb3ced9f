import { organisationJob } from '../jobs/per-organisation.js';
import type { JobDefinition } from '../jobs/runner.js';
import { announceExpiringCertificates } from './certificates.js';

/** notify.certificates (1 h): `tls.expiring` for every organisation's certificates that crossed a threshold. */
export function notifyCertificates(): JobDefinition {
  return organisationJob({
    name: 'notify.certificates',
    intervalMs: 60 * 60_000,
    key: 'announced',
    count: (d) => d.announced as number,
    work: async (db, org, at) => ({ detail: await announceExpiringCertificates(db, org, at) }),
  });
}
