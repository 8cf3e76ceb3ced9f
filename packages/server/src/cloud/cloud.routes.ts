import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import { keyActor, sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { ProviderError } from '../jobs/runner.js';
import type { WebDeps } from '../module.js';
import { accountKind, createAccount, deleteAccount, listAccounts, updateAccount } from './accounts.js';
import { CLOUD_JOBS } from './cloud.jobs.js';
import { type Collectors, type SyncOutcome, testAccount } from './sync.service.js';

/** Settings → Cloud accounts (admin session), and `POST /api/v1/admin/cloud/{id}/sync` through the job runner. */
export function registerCloudRoutes(app: FastifyInstance, deps: Pick<WebDeps, 'db' | 'secretKey' | 'jobs' | 'config'> & { collectors: Collectors }): void {
  const { db, secretKey, jobs, collectors } = deps;
  const opts = { allowInCluster: deps.config.cloud.allowInCluster };
  const org = (request: Parameters<typeof sessionPrincipal>[0]) => sessionPrincipal(request).organisationId;

  addRoute(app, routes.listCloudAccounts, async (request) => ({ data: await listAccounts(db, org(request)) }));
  addRoute(app, routes.createCloudAccount, async (request, reply) => reply.code(201).send(await createAccount(db, secretKey, keyActor(request), request.body, opts)));
  addRoute(app, routes.updateCloudAccount, async (request) => updateAccount(db, secretKey, keyActor(request), request.params.id, request.body, opts));
  addRoute(app, routes.deleteCloudAccount, async (request, reply) => {
    await deleteAccount(db, keyActor(request), request.params.id);
    return reply.code(204).send();
  });
  addRoute(app, routes.testCloudAccount, async (request) => testAccount(db, secretKey, collectors, org(request), request.params.id));
  addRoute(app, routes.syncCloudAccount, async (request) => {
    const organisationId = org(request);
    const kind = await accountKind(db, organisationId, request.params.id);
    try {
      return await jobs.runFor<SyncOutcome>(CLOUD_JOBS[kind].name, organisationId, 'admin', request.params.id);
    } catch (err) {
      // The provider's refusal or failure, in its words (the account's lastSync says the same).
      if (err instanceof ProviderError) throw new AppError('upstream_error', err.message);
      throw err;
    }
  });
}
