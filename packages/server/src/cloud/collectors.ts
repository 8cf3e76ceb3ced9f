import { ProviderError } from '../jobs/runner.js';
import { type OpenedAccount, kubeconfigServer } from './accounts.js';
import type { Collectors } from './sync.service.js';

// The providers' SDKs are loaded when an account of theirs is first synced or tested, not when the
// process starts: their sources are kept in the heap once loaded (the Kubernetes client alone is
// about 15 MB of source, the AWS SDK's EC2 client 2 MB), and every full collection of a web process
// marks that heap again (issue 30: under flow deliveries, whose buffers set off one every few
// hundred milliseconds). A deployment without cloud accounts never loads them; a web process that
// runs no jobs only when an admin tests an account.
const aws = () => import('./aws.js');
const kubernetes = () => import('./kubernetes.js');

/**
 * The collector of each kind: what the SDKs list, normalised (inventory.ts); a test is one cheap
 * read. `allowInCluster` (SERVICE_CLOUD_IN_CLUSTER): whether a Kubernetes account may use the
 * service's own service account; checked again at every sync (the setting may have changed since
 * the account was made).
 */
export function makeCollectors(opts: { allowInCluster: boolean }): Collectors {
  const refuseInCluster = (a: OpenedAccount) => {
    if (a.kind === 'kubernetes' && a.settings.inCluster && !opts.allowInCluster) {
      throw new ProviderError('kubernetes: this deployment does not allow in-cluster accounts (SERVICE_CLOUD_IN_CLUSTER=allow); give the account a kubeconfig', 400);
    }
  };
  return {
    aws: {
      collect: async (a, { signal }) => (a.kind === 'aws' ? (await aws()).collectAws(a.settings, a.credentials, signal ? { signal } : {}) : wrongKind(a.kind)),
      async test(a, { signal }) {
        if (a.kind !== 'aws') return wrongKind(a.kind);
        const r = await (await aws()).testAws(a.settings, a.credentials, signal ? { signal } : {});
        return { detail: `Reached AWS account ${r.account ?? '(unknown)'}: ${r.regions.length} regions enabled (${r.regions.join(', ')}).`, providerAccount: r.account };
      },
    },
    kubernetes: {
      async collect(a, { signal }) {
        if (a.kind !== 'kubernetes') return wrongKind(a.kind);
        refuseInCluster(a);
        return (await kubernetes()).collectKubernetes(a.settings, a.credentials, { cursor: a.cursor, ...(signal ? { signal } : {}) });
      },
      async test(a, { signal }) {
        if (a.kind !== 'kubernetes') return wrongKind(a.kind);
        refuseInCluster(a);
        const r = await (await kubernetes()).testKubernetes(a.settings, a.credentials, signal ? { signal } : {});
        const reached = r.nodeCount === null ? 'its nodes are readable' : `${r.nodeCount} nodes`;
        return { detail: `Reached the cluster: ${reached}.`, providerAccount: a.credentials.kubeconfig ? kubeconfigServer(a.credentials.kubeconfig) : 'in-cluster' };
      },
    },
  };
}

/** The collectors of a deployment that does not allow in-cluster accounts (the default). */
export const collectors: Collectors = makeCollectors({ allowInCluster: false });

function wrongKind(kind: string): never {
  throw new Error(`a ${kind} account given to another kind's collector`);
}
