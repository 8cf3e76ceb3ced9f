import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { collectKubernetes } from '../src/cloud/kubernetes.js';
import { fakeState, generateCluster, startFakeKubernetes } from './fakes/kubernetes.js';

// The Kubernetes collector at 20,000 pods (issue 25), opt-in: BENCH_KUBERNETES=1 npx vitest run
// packages/server/test/cloud-kubernetes.bench.test.ts (BENCH_KUBERNETES_PODS to change the size).
// Targets: the collection within 60 s, the heap never more than 256 MB above where it started, and
// what the inventory keeps under 64 MB. The fake's own objects are allocated before the baseline.

const PODS = Number(process.env.BENCH_KUBERNETES_PODS ?? 20_000);
const TARGET = { seconds: 60, peakMb: 256, keptMb: 64 };

/** A full garbage collection (V8's gc, exposed at run time). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;

describe.runIf(process.env.BENCH_KUBERNETES === '1')('the Kubernetes collector at scale', () => {
  it(`collects ${PODS} pods in pages, within the time and memory targets`, async () => {
    const fake = await startFakeKubernetes(fakeState({ ...generateCluster({ nodes: Math.ceil(PODS / 100), pods: PODS, services: Math.ceil(PODS / 20) }) }));
    try {
      collectGarbage();
      const base = process.memoryUsage().heapUsed;
      let peak = base;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 20);
      const t0 = performance.now();
      const inv = await collectKubernetes({}, { kubeconfig: fake.kubeconfig(fake.state.token) });
      const seconds = (performance.now() - t0) / 1000;
      clearInterval(sampler);
      collectGarbage();
      const kept = process.memoryUsage().heapUsed - base;
      console.log(`kubernetes bench: ${PODS} pods, ${inv.machines.length} machines in ${seconds.toFixed(1)} s; heap peak +${mb(peak - base)} MB, kept ${mb(kept)} MB; ${fake.requests.length} requests`);
      expect(inv.machines.filter((m) => m.kind === 'pod')).toHaveLength(PODS);
      expect(seconds).toBeLessThan(TARGET.seconds);
      expect(peak - base).toBeLessThan(TARGET.peakMb * 1e6);
      expect(kept).toBeLessThan(TARGET.keptMb * 1e6);
    } finally {
      await fake.close();
    }
  }, 120_000);
});
