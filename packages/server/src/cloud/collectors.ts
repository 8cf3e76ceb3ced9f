import { ProviderError } from '../jobs/runner.js';
import type { Collectors } from './sync.service.js';

// The collector of each kind: what the SDKs list, normalised (inventory.ts).
// (Wired to cloud/aws.ts and cloud/kubernetes.ts.)
export const collectors: Collectors = {
  aws: {
    collect: async () => {
      throw new ProviderError('AWS collector not wired yet', 501);
    },
    test: async () => {
      throw new ProviderError('AWS collector not wired yet', 501);
    },
  },
  kubernetes: {
    collect: async () => {
      throw new ProviderError('Kubernetes collector not wired yet', 501);
    },
    test: async () => {
      throw new ProviderError('Kubernetes collector not wired yet', 501);
    },
  },
};
