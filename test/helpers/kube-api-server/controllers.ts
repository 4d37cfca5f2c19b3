/**
 * The test cluster's control loop: a Job controller, a scheduler and a kubelet, run together on
 * one unref'd timer whenever something changes or a deadline (pod start, pod end, Job deadline,
 * TTL) comes due. Every write goes through the store, so the pods it makes are validated too.
 */
import { randomBytes } from 'node:crypto';
import { podRequests, quotaExceeded, unfitReason, unschedulableMessage } from './scheduling.js';
import { kubeTime, type Store, type StoreEvent } from './store.js';

export interface KubeletOptions {
  /** Pod Pending → Running this long after it is bound to a node. Default 20. */
  startDelayMs?: number;
  /** How long a pod without the `fairway.dev/test-run-ms` annotation runs; default: until deleted. */
  defaultRunMs?: number;
}

export const ANNOTATION_RUN_MS = 'fairway.dev/test-run-ms';
export const ANNOTATION_OUTCOME = 'fairway.dev/test-outcome';
const INDEX_KEY = 'batch.kubernetes.io/job-completion-index';

const terminal = (pod: any) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
const hasCondition = (obj: any, type: string) =>
  (obj.status?.conditions ?? []).some((c: any) => c.type === type && c.status === 'True');

/** Sets a condition, keeping lastTransitionTime when nothing about it changed (so reconciling twice writes
 * nothing).
 */
function setCondition(
  status: any,
  type: string,
  value: 'True' | 'False',
  reason: string,
  message: string,
): void {
  const conditions: any[] = (status.conditions ??= []);
  const existing = conditions.find((c) => c.type === type);
  if (
    existing &&
    existing.status === value &&
    (existing.reason ?? '') === reason &&
    (existing.message ?? '') === message
  )
    return;
  const condition = {
    type,
    status: value,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
    lastTransitionTime: existing?.status === value ? existing.lastTransitionTime : kubeTime(),
  };
  if (existing) conditions[conditions.indexOf(existing)] = condition;
  else conditions.push(condition);
}

function randomSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return [...randomBytes(5)].map((b) => alphabet[b % alphabet.length]).join('');
}

export class Controllers {
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private stopped = false;
  private running = false;
  private again = false;
  private nextWake = Infinity;
  private readonly boundAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  /** Pods the Job controller deletes itself (suspend, deadline, completion): not failures. */
  private readonly ownDeletes = new Set<string>();
  /** Job uid → its pods deleted from outside while still active: they count as failed, as on a real cluster.
   *
   */
  private readonly lostPods = new Map<string, number>();
  private readonly unsubscribe: () => void;
  /** Writes the controllers could not make (e.g. a pod refused by a quota), newest last. */
  readonly problems: string[] = [];

  constructor(
    private readonly store: Store,
    private readonly kubelet: (Required<Pick<KubeletOptions, 'startDelayMs'>> & KubeletOptions) | false,
  ) {
    this.unsubscribe = store.subscribe((e) => this.observe(e));
  }

  close(): void {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private observe(e: StoreEvent): void {
    if (e.kind === 'Pod' && e.type === 'DELETED') {
      const uid = e.object.metadata.uid;
      const owner = (e.object.metadata.ownerReferences ?? []).find(
        (r: any) => r.kind === 'Job' && r.controller,
      );
      if (!this.ownDeletes.delete(uid) && owner && !terminal(e.object))
        this.lostPods.set(owner.uid, (this.lostPods.get(owner.uid) ?? 0) + 1);
      this.boundAt.delete(uid);
      this.startedAt.delete(uid);
    }
    if (this.running) this.again = true;
    else this.wakeAt(Date.now() + 1);
  }

  private wakeAt(at: number): void {
    if (this.stopped || at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.reconcile(), Math.max(0, at - Date.now())).unref();
  }

  private due(at: number, now: number): boolean {
    if (at <= now) return true;
    this.nextWake = Math.min(this.nextWake, at);
    return false;
  }

  private reconcile(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.stopped) return;
    this.running = true;
    this.nextWake = Infinity;
    try {
      for (let pass = 0; pass < 20; pass++) {
        this.again = false;
        const now = Date.now();
        this.jobs(now);
        this.schedule(now);
        if (this.kubelet) this.kubeletPass(now, this.kubelet);
        this.quotaUsage();
        if (!this.again) break;
      }
    } finally {
      this.running = false;
    }
    if (this.again) this.wakeAt(Date.now() + 1);
    if (this.nextWake < Infinity) this.wakeAt(this.nextWake);
  }

  private readonly reported = new Set<string>();

  /** Reports each problem once, even when a test empties `problems` and the loop meets it again. */
  private problem(message: string): void {
    if (this.reported.has(message)) return;
    this.reported.add(message);
    this.problems.push(message);
  }

  private write(action: () => unknown): void {
    try {
      action();
    } catch (error) {
      this.problem(error instanceof Error ? error.message : String(error));
    }
  }

  private deletePod(pod: any): void {
    this.ownDeletes.add(pod.metadata.uid);
    this.write(() => this.store.delete('Pod', pod.metadata.namespace, pod.metadata.name));
  }

  private jobs(now: number): void {
    const pods = this.store.list('Pod');
    // Pods by owner, once per pass: matching every Job against every Pod is quadratic at a thousand Jobs.
    const byOwner = new Map<string, any[]>();
    for (const p of pods) for (const r of p.metadata.ownerReferences ?? []) listIn(byOwner, r.uid).push(p);
    for (const job of this.store.list('Job')) {
      const uid = job.metadata.uid;
      const mine = byOwner.get(uid) ?? [];
      const active = mine.filter((p) => !terminal(p));
      const succeeded = mine.filter((p) => p.status?.phase === 'Succeeded').length;
      const failed = mine.filter((p) => p.status?.phase === 'Failed').length + (this.lostPods.get(uid) ?? 0);
      const status = structuredClone(job.status ?? {});
      const finish = (type: 'Complete' | 'Failed', reason: string, message: string) => {
        if (type === 'Complete')
          setCondition(
            status,
            'SuccessCriteriaMet',
            'True',
            'CompletionsReached',
            'Reached expected number of succeeded pods',
          );
        else setCondition(status, 'FailureTarget', 'True', reason, message);
        setCondition(status, type, 'True', reason, message);
        status.completionTime ??= kubeTime(now);
        active.forEach((p) => this.deletePod(p));
        active.length = 0;
      };
      const spec = job.spec ?? {};
      if (hasCondition(job, 'Complete') || hasCondition(job, 'Failed')) {
        active.forEach((p) => this.deletePod(p));
        const ttl = spec.ttlSecondsAfterFinished;
        const finishedAt = Date.parse(status.completionTime ?? job.metadata.creationTimestamp);
        if (ttl !== undefined && this.due(finishedAt + ttl * 1000, now)) {
          this.write(() => this.store.delete('Job', job.metadata.namespace, job.metadata.name, 'Background'));
        }
        continue;
      }
      if (spec.suspend) {
        active.forEach((p) => this.deletePod(p));
        active.length = 0;
        setCondition(status, 'Suspended', 'True', 'JobSuspended', 'Job suspended');
        delete status.startTime; // as the real controller does: a suspended Job's scheduling directives become mutable again
      } else {
        if (hasCondition(job, 'Suspended')) {
          setCondition(status, 'Suspended', 'False', 'JobResumed', 'Job resumed');
          status.startTime = kubeTime(now);
        }
        status.startTime ??= kubeTime(now);
        const deadline = spec.activeDeadlineSeconds;
        const completions: number = spec.completions ?? 1;
        const parallelism: number = spec.parallelism ?? 1;
        if (deadline !== undefined && this.due(Date.parse(status.startTime) + deadline * 1000, now)) {
          finish('Failed', 'DeadlineExceeded', 'Job was active longer than specified deadline');
        } else if (failed > (spec.backoffLimit ?? 6)) {
          finish('Failed', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit');
        } else if (succeeded >= completions) {
          finish('Complete', 'CompletionsReached', 'Reached expected number of succeeded pods');
        } else {
          this.startPods(
            job,
            mine,
            active,
            pods,
            Math.min(parallelism, completions - succeeded) - active.length,
          );
        }
      }
      if (active.length > 0) status.active = active.length;
      else delete status.active;
      status.ready = active.filter((p) => p.status?.phase === 'Running').length;
      if (succeeded > 0) status.succeeded = succeeded;
      if (failed > 0) status.failed = failed;
      if (JSON.stringify(status) !== JSON.stringify(job.status ?? {})) {
        this.write(() => this.store.replace({ ...job, status }, 'system'));
      }
    }
  }

  /** Creates up to `count` pods for the Job, each with a completion index no pod of it holds yet. */
  private startPods(job: any, mine: any[], active: any[], allPods: any[], count: number): void {
    const indexed = job.spec.completionMode === 'Indexed';
    const taken = new Set(
      mine
        .filter((p) => p.status?.phase !== 'Failed')
        .map((p) => Number(p.metadata.annotations?.[INDEX_KEY] ?? p.metadata.labels?.[INDEX_KEY] ?? -1)),
    );
    const completions: number = job.spec.completions ?? 1;
    for (
      let index = 0, made = 0;
      made < count && index < Math.max(completions, mine.length + count);
      index++
    ) {
      if (indexed && taken.has(index)) continue;
      if (!indexed && index < mine.length) continue;
      const pod = this.podFor(job, index, indexed);
      const quota = quotaExceeded(
        pod,
        this.store.list('ResourceQuota', job.metadata.namespace),
        allPods.filter((p) => p.metadata.namespace === job.metadata.namespace && !terminal(p)),
      );
      if (quota) {
        this.problem(`pods "${job.metadata.name}-${index}-*" is forbidden: ${quota}`);
        return;
      }
      this.write(() => {
        const created = this.store.create(pod, 'system');
        active.push(created);
        allPods.push(created);
      });
      made++;
    }
  }

  private podFor(job: any, index: number, indexed: boolean): any {
    const template = structuredClone(job.spec.template ?? {});
    const jobName: string = job.metadata.name;
    const uid: string = job.metadata.uid;
    const indexLabel = indexed ? { [INDEX_KEY]: String(index) } : {};
    const spec = template.spec ?? {};
    if (indexed) {
      const env = {
        name: 'JOB_COMPLETION_INDEX',
        valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${INDEX_KEY}']` } },
      };
      for (const c of spec.containers ?? []) c.env = [...(c.env ?? []), env];
    }
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${jobName}-${index}-${randomSuffix()}`,
        namespace: job.metadata.namespace,
        labels: {
          ...(template.metadata?.labels ?? {}),
          'job-name': jobName,
          'batch.kubernetes.io/job-name': jobName,
          'controller-uid': uid,
          'batch.kubernetes.io/controller-uid': uid,
          ...indexLabel,
        },
        annotations: { ...(template.metadata?.annotations ?? {}), ...indexLabel },
        ownerReferences: [
          {
            apiVersion: 'batch/v1',
            kind: 'Job',
            name: jobName,
            uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec,
      status: { phase: 'Pending' },
    };
  }

  /** Keeps each ResourceQuota's status.hard / status.used current, as the quota controller does. */
  private quotaUsage(): void {
    const pods = this.store.list('Pod').filter((p) => !terminal(p));
    const asQuantity = (n: number) => (Number.isInteger(n) ? String(n) : `${Math.round(n * 1000)}m`);
    for (const quota of this.store.list('ResourceQuota')) {
      const hard: Record<string, string> = quota.spec?.hard ?? {};
      const inNamespace = pods.filter((p) => p.metadata.namespace === quota.metadata.namespace);
      const used: Record<string, string> = {};
      for (const key of Object.keys(hard)) {
        const resource = key.replace(/^(requests|limits)\./, '');
        used[key] =
          key === 'pods'
            ? String(inNamespace.length)
            : asQuantity(inNamespace.reduce((sum, p) => sum + (podRequests(p).get(resource) ?? 0), 0));
      }
      const status = { hard, used };
      if (JSON.stringify(status) !== JSON.stringify(quota.status))
        this.write(() => this.store.replace({ ...quota, status }, 'system'));
    }
  }

  private schedule(now: number): void {
    const nodes = this.store.list('Node');
    const pods = this.store.list('Pod');
    // Pods bound to each node, once per pass (and as this pass binds more).
    const bound = new Map<string, any[]>();
    for (const p of pods) if (p.spec?.nodeName && !terminal(p)) listIn(bound, p.spec.nodeName).push(p);
    for (const pod of pods) {
      if (pod.spec?.nodeName || terminal(pod)) continue;
      const reasons = new Map<string, number>();
      const node = nodes.find((n) => {
        const why = unfitReason(pod, n, bound.get(n.metadata.name) ?? []);
        if (why) reasons.set(why, (reasons.get(why) ?? 0) + 1);
        return why === undefined;
      });
      const status = structuredClone(pod.status ?? {});
      if (node) {
        setCondition(
          status,
          'PodScheduled',
          'True',
          'Scheduled',
          `Successfully assigned ${pod.metadata.namespace}/${pod.metadata.name} to ${node.metadata.name}`,
        );
        const next = { ...pod, spec: { ...pod.spec, nodeName: node.metadata.name }, status };
        this.write(() => {
          listIn(bound, node.metadata.name).push(this.store.replace(next, 'system'));
        });
        this.boundAt.set(pod.metadata.uid, now);
      } else {
        setCondition(
          status,
          'PodScheduled',
          'False',
          'Unschedulable',
          unschedulableMessage(reasons, nodes.length),
        );
        if (JSON.stringify(status) !== JSON.stringify(pod.status))
          this.write(() => this.store.replace({ ...pod, status }, 'system'));
      }
    }
  }

  private kubeletPass(
    now: number,
    options: Required<Pick<KubeletOptions, 'startDelayMs'>> & KubeletOptions,
  ): void {
    const nodes = new Set(this.store.list('Node').map((n) => n.metadata.name));
    for (const pod of this.store.list('Pod')) {
      if (!pod.spec?.nodeName || terminal(pod)) continue;
      const uid = pod.metadata.uid;
      if (!nodes.has(pod.spec.nodeName)) {
        // Pod garbage collection: a pod bound to a node that no longer exists is deleted.
        this.write(() => this.store.delete('Pod', pod.metadata.namespace, pod.metadata.name));
        continue;
      }
      const boundAt = this.boundAt.get(uid) ?? now;
      this.boundAt.set(uid, boundAt);
      const status = structuredClone(pod.status ?? {});
      const containers: any[] = pod.spec.containers ?? [];
      const base = (c: any) => ({ name: c.name, image: c.image, imageID: '', restartCount: 0 });
      if (status.phase === 'Pending') {
        const started = this.due(boundAt + options.startDelayMs, now);
        const badImage = containers.find((c) => String(c.image).includes('does-not-exist'));
        status.hostIP = '10.0.0.1';
        if (badImage) {
          const waiting = started
            ? { reason: 'ImagePullBackOff', message: `Back-off pulling image "${badImage.image}"` }
            : {
                reason: 'ErrImagePull',
                message: `failed to pull and unpack image "${badImage.image}": not found`,
              };
          setCondition(
            status,
            'Ready',
            'False',
            'ContainersNotReady',
            `containers with unready status: [${badImage.name}]`,
          );
          status.containerStatuses = containers.map((c) => ({
            ...base(c),
            ready: false,
            started: false,
            state: { waiting: c === badImage ? waiting : { reason: 'ContainerCreating' } },
          }));
        } else if (!started) {
          status.containerStatuses = containers.map((c) => ({
            ...base(c),
            ready: false,
            started: false,
            state: { waiting: { reason: 'ContainerCreating' } },
          }));
        } else {
          const at = kubeTime(now);
          this.startedAt.set(uid, now);
          Object.assign(status, {
            phase: 'Running',
            startTime: at,
            podIP: `10.1.${(now >> 8) & 255}.${now & 255}`,
          });
          for (const type of ['Initialized', 'ContainersReady', 'Ready'])
            setCondition(status, type, 'True', '', '');
          status.containerStatuses = containers.map((c) => ({
            ...base(c),
            imageID: `${c.image}@sha256:test`,
            ready: true,
            started: true,
            state: { running: { startedAt: at } },
          }));
        }
      } else if (status.phase === 'Running') {
        // What the workload does: its pod annotation, or (as a real program reads its
        // environment) the first container's FAIRWAY_TEST_RUN_MS / FAIRWAY_TEST_OUTCOME.
        const env = (name: string): string | undefined =>
          containers[0]?.env?.find((e: { name: string; value?: string }) => e.name === name)?.value;
        const annotation = pod.metadata.annotations?.[ANNOTATION_RUN_MS] ?? env('FAIRWAY_TEST_RUN_MS');
        const runMs = annotation !== undefined ? Number(annotation) : options.defaultRunMs;
        const startedAt = this.startedAt.get(uid) ?? now;
        this.startedAt.set(uid, startedAt);
        if (runMs === undefined || !this.due(startedAt + runMs, now)) continue;
        const outcome = pod.metadata.annotations?.[ANNOTATION_OUTCOME] ?? env('FAIRWAY_TEST_OUTCOME');
        const [phase, exitCode, reason] =
          outcome === 'oom'
            ? ['Failed', 137, 'OOMKilled']
            : outcome === 'fail'
              ? ['Failed', 1, 'Error']
              : ['Succeeded', 0, 'Completed'];
        const finishedAt = kubeTime(now);
        status.phase = phase;
        for (const type of ['ContainersReady', 'Ready'])
          setCondition(status, type, 'False', phase === 'Succeeded' ? 'PodCompleted' : 'PodFailed', '');
        status.containerStatuses = containers.map((c) => ({
          ...base(c),
          imageID: `${c.image}@sha256:test`,
          ready: false,
          started: false,
          state: {
            terminated: {
              exitCode,
              reason,
              startedAt: status.startTime ?? finishedAt,
              finishedAt,
              ...(reason === 'Error'
                ? { message: `the test workload failed (${ANNOTATION_OUTCOME}: fail)` }
                : {}),
            },
          },
        }));
      }
      if (JSON.stringify(status) !== JSON.stringify(pod.status))
        this.write(() => this.store.replace({ ...pod, status }, 'system'));
    }
  }
}

/** The list under `key`, made empty when absent. */
function listIn<T>(map: Map<string, T[]>, key: string): T[] {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  return list;
}
