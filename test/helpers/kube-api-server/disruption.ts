/**
 * Disruptions, marked as a real cluster marks them (the pod condition DisruptionTarget=True, which a
 * Job's podFailurePolicy can match):
 * - the Eviction API (`POST …/pods/<name>/eviction`, policy/v1): reason EvictionByEvictionAPI, then a
 *   graceful delete (no PodDisruptionBudgets are served, so nothing refuses it);
 * - `drain`: cordons the node (spec.unschedulable) and evicts every pod on it, as `kubectl drain`;
 * - pod GC of a deleted (lost) node: reason DeletionByPodGC, phase Failed, then removed at once;
 * - node-pressure eviction by the kubelet: reason TerminationByKubelet, phase Failed, status.reason
 *   Evicted, the containers killed (137); the pod stays (Failed) as on a real node.
 */
import { type Cluster, setCondition } from './cluster.js';
import { notFound, typeByKind } from './resources.js';
import { kubeTime, terminal } from './store.js';

type Disruptor = Pick<Cluster, 'store' | 'events'>;

function markDisrupted(
  c: Disruptor,
  pod: any,
  reason: string,
  message: string,
  extra?: (status: any) => void,
): any {
  const status = structuredClone(pod.status ?? {});
  setCondition(status, 'DisruptionTarget', 'True', reason, message);
  extra?.(status);
  return c.store.replace({ ...pod, status }, 'system');
}

/** The Eviction API: marks the pod and deletes it gracefully (deleteOptions.gracePeriodSeconds honoured). */
export function evictPod(c: Disruptor, namespace: string, name: string, deleteOptions?: any): void {
  const pod = c.store.get('Pod', namespace, name);
  if (!pod) throw notFound(typeByKind('Pod')!, name);
  if (!terminal(pod) && !pod.metadata.deletionTimestamp)
    markDisrupted(c, pod, 'EvictionByEvictionAPI', 'Eviction API: evicting');
  const grace = deleteOptions?.gracePeriodSeconds;
  c.store.delete('Pod', namespace, name, grace !== undefined ? { gracePeriodSeconds: Number(grace) } : {});
}

/** `kubectl drain`: cordon, then evict every pod bound to the node. Returns the evicted pods' `ns/name`. */
export function drainNode(c: Disruptor, nodeName: string): string[] {
  const node = c.store.get('Node', undefined, nodeName);
  if (!node) throw notFound(typeByKind('Node')!, nodeName);
  if (!node.spec?.unschedulable) {
    const { resourceVersion: _rv, ...metadata } = node.metadata;
    c.store.replace({ ...node, metadata, spec: { ...node.spec, unschedulable: true } }, 'system');
  }
  const evicted: string[] = [];
  for (const pod of c.store.list('Pod').filter((p) => p.spec?.nodeName === nodeName && !terminal(p))) {
    evictPod(c, pod.metadata.namespace, pod.metadata.name);
    evicted.push(`${pod.metadata.namespace}/${pod.metadata.name}`);
  }
  return evicted;
}

/** The pod garbage collector: pods bound to a node that no longer exists are marked Failed and removed. */
export function collectOrphanedPods(c: Cluster): void {
  const nodes = new Set(c.store.peekAll('Node').map((n) => n.metadata.name as string));
  for (const pod of c.store.list('Pod')) {
    if (!pod.spec?.nodeName || nodes.has(pod.spec.nodeName)) continue;
    const { namespace, name } = pod.metadata;
    if (!terminal(pod))
      c.write(() =>
        markDisrupted(c, pod, 'DeletionByPodGC', 'PodGC: node no longer exists', (status) => {
          status.phase = 'Failed';
        }),
      );
    c.write(() => c.store.delete('Pod', namespace, name, { gracePeriodSeconds: 0 }));
  }
}

/** Node-pressure eviction: the kubelet kills the pod (SIGKILL, 137) and marks it Failed / Evicted; it stays. */
export function kubeletEvictPod(
  c: Disruptor & Pick<Cluster, 'logs'>,
  namespace: string,
  name: string,
  resource = 'memory',
): void {
  const pod = c.store.get('Pod', namespace, name);
  if (!pod) throw notFound(typeByKind('Pod')!, name);
  if (terminal(pod)) return;
  const message = `The node was low on resource: ${resource}. Threshold quantity: 100Mi, available: 51200Ki. `;
  const now = kubeTime();
  const source = { component: 'kubelet', host: pod.spec?.nodeName };
  c.events.record(pod, 'Warning', 'Evicted', message, source);
  for (const container of pod.spec?.containers ?? [])
    c.events.record(pod, 'Normal', 'Killing', `Stopping container ${container.name}`, source);
  for (const container of pod.spec?.containers ?? []) c.logs.ended(pod, container.name);
  markDisrupted(c, pod, 'TerminationByKubelet', message, (status) => {
    Object.assign(status, { phase: 'Failed', reason: 'Evicted', message });
    for (const type of ['ContainersReady', 'Ready']) setCondition(status, type, 'False', 'PodFailed', '');
    status.containerStatuses = (pod.spec?.containers ?? []).map((ctr: any) => ({
      name: ctr.name,
      image: ctr.image,
      imageID: `${ctr.image}@sha256:test`,
      restartCount: 0,
      ready: false,
      started: false,
      state: {
        terminated: { exitCode: 137, reason: 'Error', startedAt: status.startTime ?? now, finishedAt: now },
      },
    }));
  });
}
