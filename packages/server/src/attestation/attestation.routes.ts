import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import type { WebDeps } from '../module.js';
import { attestSnapshot } from './attestation.service.js';
import { signingKey } from './signing-key.js';

/** GET /api/v1/snapshots/{id}/attestation.pdf (spec 4.6): session, admin or owner; GET /api/v1/attestation/public-key: public. */
export function registerAttestationRoutes(app: FastifyInstance, { db, secretKey }: Pick<WebDeps, 'db' | 'secretKey'>): void {
  addRoute(app, routes.getSnapshotAttestation, async (request, reply) => {
    const { pdf } = await attestSnapshot(db, secretKey, sessionPrincipal(request).organisationId, request.params.id);
    return reply
      .type('application/pdf')
      .header('Content-Disposition', `attachment; filename="snapshot-${request.params.id}-attestation.pdf"`)
      .header('Cache-Control', 'no-store')
      .send(Buffer.from(pdf));
  });
  addRoute(app, routes.getAttestationPublicKey, async () => {
    const key = await signingKey(db, secretKey);
    return { algorithm: 'Ed25519' as const, publicKeyPem: key.publicKeyPem, fingerprint: key.fingerprint };
  });
}
