// What the cluster said about a run's pods and objects: core/v1 Events (every API server serves
// them; events.k8s.io/v1 is a view of the same objects), watched in each tenant namespace by an
// informer started when the tenant is synced and stopped when it goes, and indexed by the object
// they are about. Only the newest events of each object are kept; an Event the cluster removes (its
// TTL, an hour by default) leaves the index too. A run's events are those about its objects, all
// named after its job (`fw-<job id>…`), told from other runs' by the pods' admission or by time.
import { CoreV1Api, type CoreV1Event, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type { BackendClusterEvent, BackendLogPod, BackendLogRun } from '../port.js';
import { ResilientInformer } from './client.js';
import { ANNOTATION_ADMISSION } from './naming.js';
import { type RunPod, toIso } from './run-pods.js';
import type { KubernetesSettings } from './settings.js';
import { workloadObjectName } from './workload-kinds.js';

/** Events kept per object (the newest): the cluster already folds repeats into one with a count. */
export const EVENTS_PER_OBJECT = 100;
/** Events of objects whose run is not known by its pods count from this long before the admission. */
const BEFORE_ADMISSION_MS = 1000;
/** …and until this long after its end (a stopped pod's Killing comes as the run ends). */
const AFTER_END_MS = 30_000;

interface Kept {
  name: string;
  kind: string;
  object: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
}

interface Watched {
  informer: ResilientInformer<CoreV1Event>;
  /** `<kind>/<name>` of the object → its events by Event name. */
  byObject: Map<string, Map<string, Kept>>;
  /** The first list landed, or the API took too long (then reads do not wait again: it may be refused). */
  ready: Promise<unknown>;
}

const ms = (v: Date | string | undefined) => {
  const iso = toIso(v);
  const parsed = iso ? Date.parse(iso) : Number.NaN;
  return Number.isNaN(parsed) ? undefined : parsed;
};

function kept(e: CoreV1Event): Kept | null {
  const name = e.metadata?.name;
  const object = e.involvedObject?.name;
  if (!name || !object) return null;
  const first =
    ms(e.firstTimestamp) ??
    ms(e.eventTime as Date | string | undefined) ??
    ms(e.metadata.creationTimestamp) ??
    0;
  const last = ms(e.series?.lastObservedTime as Date | string | undefined) ?? ms(e.lastTimestamp) ?? first;
  return {
    name,
    kind: e.involvedObject.kind ?? '',
    object,
    type: e.type === 'Warning' ? 'Warning' : 'Normal',
    reason: e.reason ?? '',
    message: e.message ?? '',
    count: e.series?.count ?? e.count ?? 1,
    firstSeen: first,
    lastSeen: Math.max(first, last),
  };
}

export class ClusterEvents {
  private readonly watched = new Map<string, Watched>();
  private readonly core: CoreV1Api;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly settings: KubernetesSettings,
    private readonly log: (message: string) => void,
  ) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  /** Watches exactly these namespaces from now on (the tenants' as last synced). */
  sync(namespaces: ReadonlySet<string>): void {
    for (const [namespace, w] of this.watched)
      if (!namespaces.has(namespace)) {
        this.watched.delete(namespace);
        void w.informer.stop();
      }
    for (const namespace of namespaces) if (!this.watched.has(namespace)) this.watch(namespace);
  }

  async close(): Promise<void> {
    const all = [...this.watched.values()];
    this.watched.clear();
    await Promise.all(all.map((w) => w.informer.stop()));
  }

  private watch(namespace: string): void {
    const byObject = new Map<string, Map<string, Kept>>();
    const put = (e: CoreV1Event) => {
      const k = kept(e);
      if (!k || (e.involvedObject.namespace && e.involvedObject.namespace !== namespace)) return;
      const key = `${k.kind}/${k.object}`;
      let events = byObject.get(key);
      if (!events) byObject.set(key, (events = new Map()));
      events.set(k.name, k);
      if (events.size <= EVENTS_PER_OBJECT) return;
      let oldest: Kept | undefined;
      for (const x of events.values()) if (!oldest || x.lastSeen < oldest.lastSeen) oldest = x;
      events.delete(oldest!.name);
    };
    const remove = (e: CoreV1Event) => {
      const key = `${e.involvedObject?.kind ?? ''}/${e.involvedObject?.name}`;
      const events = byObject.get(key);
      events?.delete(e.metadata?.name ?? '');
      if (events?.size === 0) byObject.delete(key);
    };
    const informer = new ResilientInformer<CoreV1Event>(this.kubeConfig, {
      path: `/api/v1/namespaces/${namespace}/events`,
      list: () => this.core.listNamespacedEvent({ namespace }),
      onChange: put,
      onDelete: remove,
      onHealth: (healthy, error) =>
        this.log(
          healthy
            ? `watching the events of ${namespace} again`
            : `lost the watch on the events of ${namespace} (${error instanceof Error ? error.message : String(error)}); retrying with backoff`,
        ),
      listTimeoutMs: this.settings.requestTimeoutMs,
      restartEveryMs: this.settings.watchRestartMs,
    });
    const synced = informer.start();
    const timeout = new Promise((resolve) => setTimeout(resolve, this.settings.requestTimeoutMs).unref());
    this.watched.set(namespace, { informer, byObject, ready: Promise.race([synced, timeout]) });
  }

  /**
   * The run's events, oldest first. `pods`: the run's pods (their positions name the pods events are
   * about); `jobPods`: every pod of the job the cache holds (pods of other admissions are left out).
   */
  async ofRun(
    run: BackendLogRun,
    namespace: string,
    pods: readonly RunPod[],
    jobPods: Iterable<V1Pod>,
  ): Promise<BackendClusterEvent[]> {
    const w = this.watched.get(namespace);
    if (!w) return [];
    await w.ready;
    const positions = new Map<string, BackendLogPod>();
    for (const p of pods) if (p.pod.metadata?.name) positions.set(p.pod.metadata.name, p.position);
    const otherRuns = new Set<string>();
    for (const p of jobPods)
      if (p.metadata?.annotations?.[ANNOTATION_ADMISSION] !== String(run.admissionAt))
        otherRuns.add(p.metadata?.name ?? '');
    const prefixes = [...new Set([`fw-${run.jobId.toLowerCase()}`, workloadObjectName(run.jobId)])];
    const ours = (name: string) => prefixes.some((p) => name === p || name.startsWith(`${p}-`));
    const from = run.admissionAt - BEFORE_ADMISSION_MS;
    const until = run.endedAt === null ? Infinity : run.endedAt + AFTER_END_MS;
    const out: (BackendClusterEvent & { name: string })[] = [];
    for (const events of w.byObject.values())
      for (const e of events.values()) {
        const isPod = e.kind === 'Pod';
        const known = isPod ? positions.get(e.object) : undefined;
        if (!known && (!ours(e.object) || (isPod && otherRuns.has(e.object)))) continue;
        // A pod of this run says so itself; anything else is this run's while it went on.
        if (!known && (e.lastSeen < from || e.firstSeen > until)) continue;
        const pod = known ?? (isPod ? batchPodPosition(e.object, run) : null);
        out.push({
          name: e.name,
          type: e.type,
          reason: e.reason,
          message: e.message,
          count: e.count,
          firstSeen: e.firstSeen,
          lastSeen: e.lastSeen,
          object: pod ? `Pod ${pod.index} of ${pod.podSet}` : e.kind || 'object',
          pod,
        });
      }
    out.sort((a, b) => a.firstSeen - b.firstSeen || a.lastSeen - b.lastSeen || a.name.localeCompare(b.name));
    return out.map(({ name: _name, ...event }) => event);
  }
}

/**
 * A gone batch pod's position from its name: `fw-<job id>-<pod set #>-<index>-<suffix>` (an Indexed
 * Job's) or `fw-<job id>-<pod set #>-<suffix>` (one pod); null for any other name.
 */
function batchPodPosition(name: string, run: BackendLogRun): BackendLogPod | null {
  const prefix = `fw-${run.jobId.toLowerCase()}-`;
  if (!name.startsWith(prefix)) return null;
  const parts = name.slice(prefix.length).split('-');
  if (parts.length < 2 || parts.length > 3 || !parts.slice(0, -1).every((p) => /^\d+$/.test(p))) return null;
  const podSet = run.podSets[Number(parts[0])];
  return podSet ? { podSet: podSet.name, index: parts.length === 3 ? Number(parts[1]) : 0 } : null;
}
