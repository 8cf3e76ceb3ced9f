import { kubeconfigServer } from './accounts.js';
import { collectAws, testAws } from './aws.js';
import { collectKubernetes, testKubernetes } from './kubernetes.js';
import type { Collectors } from './sync.service.js';

/** The collector of each kind: what the SDKs list, normalised (inventory.ts); a test is one cheap read. */
export const collectors: Collectors = {
  aws: {
    collect: (a, { signal }) => (a.kind === 'aws' ? collectAws(a.settings, a.credentials, signal ? { signal } : {}) : wrongKind(a.kind)),
    async test(a, { signal }) {
      if (a.kind !== 'aws') return wrongKind(a.kind);
      const r = await testAws(a.settings, a.credentials, signal ? { signal } : {});
      return { detail: `Reached AWS account ${r.account ?? '(unknown)'}: ${r.regions.length} regions enabled (${r.regions.join(', ')}).`, providerAccount: r.account };
    },
  },
  kubernetes: {
    collect: (a, { signal }) => (a.kind === 'kubernetes' ? collectKubernetes(a.settings, a.credentials, { cursor: a.cursor, ...(signal ? { signal } : {}) }) : wrongKind(a.kind)),
    async test(a, { signal }) {
      if (a.kind !== 'kubernetes') return wrongKind(a.kind);
      const r = await testKubernetes(a.settings, a.credentials, signal ? { signal } : {});
      return { detail: `Reached the cluster: ${r.nodeCount === null ? 'its nodes are readable' : `${r.nodeCount} nodes`}.`, providerAccount: a.credentials.kubeconfig ? kubeconfigServer(a.credentials.kubeconfig) : null };
    },
  },
};

function wrongKind(kind: string): never {
  throw new Error(`a ${kind} account given to another kind's collector`);
}
