// The backend's side of exact placement (placement-gates.ts): on every change to a tracked run's
// pods, its gated pods are released to their nodes; a pod whose node was cordoned, drained or lost
// since the admission is not released and the run is handed back as disrupted; a release the API
// server did not take (an outage) is asked again soon, not only at the next resync.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import { LABEL_POD_SET } from './naming.js';
import { type GatedRun, releaseGatedPods } from './placement-gates.js';

export interface GateReleaserDeps {
  client: KubeClient;
  /** The run as tracked now (undefined once it is not): a late answer about an older run changes nothing. */
  run(jobId: string): GatedRun | undefined;
  pods(jobId: string): readonly V1Pod[];
  node(name: string): V1Node | undefined;
  /** A pod's node cannot take it any more: the run must be placed again. */
  unavailable(jobId: string, reason: string): void;
  log(message: string): void;
  logError(error: unknown): void;
  closed(): boolean;
}

const RETRY_MS = 1000;

export class GateReleaser {
  /** Gated pods asked to be released, by uid (the informer shows the release a moment later). */
  private readonly asked = new Map<string, string>();

  constructor(private readonly deps: GateReleaserDeps) {}

  release(jobId: string): void {
    const { deps } = this;
    const run = deps.run(jobId);
    if (!run || deps.closed()) return;
    const patch = (pod: V1Pod, body: Record<string, unknown>) =>
      deps.client.mergePatch(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: pod.metadata!.name!, namespace: pod.metadata!.namespace },
        },
        body,
      );
    const podSet = (pod: V1Pod) => pod.metadata?.labels?.[LABEL_POD_SET];
    const unusable = (node: string) => this.unusable(node);
    void releaseGatedPods(patch, run, deps.pods(jobId), this.asked, podSet, unusable, run.indexOf)
      .then(({ stuck, unavailable }) => {
        for (const pod of stuck)
          deps.log(`pod ${pod.metadata?.name} of job ${jobId} has no node in its admission; left gated`);
        if (unavailable && deps.run(jobId)?.admissionAt === run.admissionAt)
          deps.unavailable(jobId, `NodeUnavailable: ${unavailable}`);
      })
      .catch((error: unknown) => {
        deps.logError(error);
        if (!deps.closed()) setTimeout(() => this.release(jobId), RETRY_MS).unref();
      });
    // Bounded: a forgotten uid at worst costs one more (idempotent) patch.
    if (this.asked.size > 10_000) this.asked.clear();
  }

  /** Why a node cannot take a pod now (gone, cordoned, not ready), or null. */
  private unusable(name: string): string | null {
    const node = this.deps.node(name);
    if (!node) return `node ${name} is gone`;
    if (node.spec?.unschedulable) return `node ${name} is cordoned`;
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready && ready.status !== 'True') return `node ${name} is not ready`;
    return null;
  }
}
