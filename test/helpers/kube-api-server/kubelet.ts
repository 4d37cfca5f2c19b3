/**
 * The kubelet of every node: starts a bound pod after `startDelayMs` (Running, a pod IP, container
 * states), ends it when its workload does (`fairway.dev/test-run-ms`, `fairway.dev/test-outcome`), pulls
 * nothing for images named `…does-not-exist…` (ErrImagePull, then ImagePullBackOff), and stops a pod being
 * deleted: SIGTERM (a Killing Event), exit after `fairway.dev/test-sigterm-ms` (143, or 0 when the outcome
 * is `success`) or, past the grace period, SIGKILL (137); then the pod is Failed (Succeeded) and removed.
 * Ray nodes (label ray.io/is-ray-node: yes) run until they are stopped. Starting a container it records
 * Pulling, Pulled, Created and Started; what the workload writes to its log is workload-output.ts's.
 * A container that exits in a pod whose restartPolicy restarts it (Always, the default for a bare pod;
 * OnFailure and a non-zero exit) goes into CrashLoopBackOff and starts again; the pod stays Running.
 * A running container is ready at once, or when its readinessProbe first passes (readiness.ts).
 */
import {
  ANNOTATION_OUTCOME,
  ANNOTATION_RUN_MS,
  ANNOTATION_SIGTERM_MS,
  type Cluster,
  type ClusterOptions,
  setCondition,
  workloadSetting,
} from './cluster.js';
import { applyReadiness } from './readiness.js';
import { kubeTime, terminal } from './store.js';
import { WorkloadOutput } from './workload-output.js';

type Options = Exclude<ClusterOptions['kubelet'], false>;

export class Kubelet {
  private readonly boundAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  private readonly sigtermAt = new Map<string, number>();
  /** Containers in CrashLoopBackOff (restartPolicy Always / OnFailure): when they start again. */
  private readonly restartAt = new Map<string, number>();
  private readonly hostIps = new Map<string, string>();
  /** Pods whose images are being pulled (the Pulling Event was recorded). */
  private readonly pulling = new Set<string>();
  /** Pods a test holds not ready (setPodReady), by uid. */
  private readonly held = new Set<string>();
  private readonly output: WorkloadOutput;
  private podIps = 9;

  constructor(
    private readonly c: Cluster,
    private readonly options: Options,
  ) {
    this.output = new WorkloadOutput(c);
  }

  /** The scheduler bound the pod now. */
  bound(uid: string, now: number): void {
    this.boundAt.set(uid, now);
  }

  forget(uid: string): void {
    this.boundAt.delete(uid);
    this.startedAt.delete(uid);
    this.sigtermAt.delete(uid);
    this.restartAt.delete(uid);
    this.pulling.delete(uid);
    this.held.delete(uid);
    this.output.forget(uid);
  }

  /** Holds a pod not ready (its readiness probe failing), or lets its probes decide again. */
  setReady(uid: string, ready: boolean): void {
    if (ready) this.held.delete(uid);
    else this.held.add(uid);
  }

  /** Readiness of a running pod's containers and its Ready condition, from its probes (readiness.ts). */
  private readiness(pod: any, status: any, now: number): void {
    if (!status.containerStatuses?.length) return; // not one this kubelet started
    const uid = pod.metadata.uid;
    const startedAt =
      this.startedAt.get(uid) ??
      (Date.parse(status.containerStatuses?.[0]?.state?.running?.startedAt ?? '') || now);
    applyReadiness(pod, status, startedAt, this.held.has(uid), (at) => this.c.due(at, now), now);
  }

  pass(now: number): void {
    const nodes = new Set(this.c.store.peekAll('Node').map((n) => n.metadata.name as string));
    for (const pod of this.c.store.list('Pod')) {
      if (!pod.spec?.nodeName || terminal(pod) || !nodes.has(pod.spec.nodeName)) continue;
      if (pod.metadata.deletionTimestamp) this.terminate(pod, now);
      else this.run(pod, now);
    }
  }

  private hostIp(node: string): string {
    let ip = this.hostIps.get(node);
    if (ip === undefined) {
      const found = this.c.store
        .peek('Node', undefined, node)
        ?.status?.addresses?.find((a: any) => a.type === 'InternalIP')?.address;
      const k = this.hostIps.size + 1;
      ip = String(found ?? `10.0.${(k >> 8) & 255}.${k & 255}`);
      this.hostIps.set(node, ip);
    }
    return ip;
  }

  private source(pod: any) {
    return { component: 'kubelet', host: pod.spec.nodeName as string };
  }

  private write(pod: any, status: any): void {
    if (JSON.stringify(status) !== JSON.stringify(pod.status))
      this.c.write(() => this.c.store.replace({ ...pod, status }, 'system'));
  }

  /**
   * When the workload ends by itself, or undefined (it runs until stopped). A Ray node (`ray start --block`,
   * label ray.io/is-ray-node) runs until stopped whatever it says: a RayJob's run time is its Ray job's.
   */
  private runEnd(pod: any, now: number): number | undefined {
    if (pod.metadata.labels?.['ray.io/is-ray-node'] === 'yes') return undefined;
    const setting = workloadSetting(pod, ANNOTATION_RUN_MS, 'FAIRWAY_TEST_RUN_MS');
    const command = pod.spec.containers?.[0]?.command;
    const sleeps =
      this.options.sleepCommands && command?.[0] === 'sleep' && /^\d+$/.test(String(command[1] ?? ''))
        ? Number(command[1]) * 1000
        : undefined;
    const runMs = setting !== undefined ? Number(setting) : (sleeps ?? this.options.defaultRunMs);
    if (runMs === undefined) return undefined;
    const startedAt = this.startedAt.get(pod.metadata.uid) ?? now;
    this.startedAt.set(pod.metadata.uid, startedAt);
    return startedAt + runMs;
  }

  private run(pod: any, now: number): void {
    const uid = pod.metadata.uid;
    const boundAt = this.boundAt.get(uid) ?? now;
    this.boundAt.set(uid, boundAt);
    const status = structuredClone(pod.status ?? {});
    const containers: any[] = pod.spec.containers ?? [];
    const base = (c: any) => ({ name: c.name, image: c.image, imageID: '', restartCount: 0 });
    if (status.phase === 'Pending') {
      const started = this.c.due(boundAt + this.options.startDelayMs, now);
      if (!this.pulling.has(uid)) {
        this.pulling.add(uid);
        for (const c of containers)
          this.c.events.record(pod, 'Normal', 'Pulling', `Pulling image "${c.image}"`, this.source(pod));
      }
      const badImage = containers.find((c) => String(c.image).includes('does-not-exist'));
      const hostIP = this.hostIp(pod.spec.nodeName);
      Object.assign(status, { hostIP, hostIPs: [{ ip: hostIP }] });
      if (badImage) {
        const waiting = started
          ? { reason: 'ImagePullBackOff', message: `Back-off pulling image "${badImage.image}"` }
          : {
              reason: 'ErrImagePull',
              message: `failed to pull and unpack image "${badImage.image}": not found`,
            };
        const before = pod.status?.containerStatuses?.find((s: any) => s.name === badImage.name)?.state
          ?.waiting?.reason;
        if (before !== waiting.reason)
          this.c.events.record(
            pod,
            started ? 'Normal' : 'Warning',
            started ? 'BackOff' : 'Failed',
            started ? waiting.message : `Failed to pull image "${badImage.image}": not found`,
            this.source(pod),
          );
        setCondition(
          status,
          'Ready',
          'False',
          'ContainersNotReady',
          `containers with unready status: [${badImage.name}]`,
          now,
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
        const n = ++this.podIps;
        const podIP = `10.244.${(n >> 8) & 255}.${n & 255}`;
        Object.assign(status, { phase: 'Running', startTime: at, podIP, podIPs: [{ ip: podIP }] });
        setCondition(status, 'Initialized', 'True', '', '', now);
        status.containerStatuses = containers.map((c) => ({
          ...base(c),
          imageID: `${c.image}@sha256:test`,
          ready: true,
          started: true,
          state: { running: { startedAt: at } },
        }));
        this.readiness(pod, status, now);
        this.containersStarted(pod, now, boundAt);
      }
    } else if (status.phase === 'Running') {
      const restartAt = this.restartAt.get(uid);
      if (restartAt !== undefined) {
        if (!this.c.due(restartAt, now)) return;
        this.restartAt.delete(uid);
        this.startedAt.set(uid, now);
        const at = kubeTime(now);
        status.containerStatuses = (status.containerStatuses ?? []).map((cs: any) => ({
          ...cs,
          ready: true,
          started: true,
          state: { running: { startedAt: at } },
        }));
        this.readiness(pod, status, now);
        this.output.started(pod, now);
        this.write(pod, status);
        return;
      }
      this.output.tick(pod, now);
      const end = this.runEnd(pod, now);
      if (end === undefined || !this.c.due(end, now)) {
        this.readiness(pod, status, now);
        this.write(pod, status);
        return;
      }
      const outcome = workloadSetting(pod, ANNOTATION_OUTCOME, 'FAIRWAY_TEST_OUTCOME');
      const [exitCode, reason] =
        outcome === 'oom' ? [137, 'OOMKilled'] : outcome === 'fail' ? [1, 'Error'] : [0, 'Completed'];
      const policy = pod.spec.restartPolicy ?? 'Always';
      if (policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0)) {
        this.crashLoop(pod, status, now, exitCode, reason);
        return;
      }
      this.finish(pod, status, now, exitCode, reason);
      return;
    }
    this.write(pod, status);
  }

  /**
   * A container that exited in a pod that restarts it: CrashLoopBackOff (10 s, doubling up to 5 min, as
   * the kubelet backs off), lastState terminated, restartCount up; the pod stays Running.
   */
  private crashLoop(pod: any, status: any, now: number, exitCode: number, reason: string): void {
    const { uid, name, namespace } = pod.metadata;
    const restarts = (status.containerStatuses?.[0]?.restartCount ?? 0) + 1;
    const delayMs = Math.min(10_000 * 2 ** (restarts - 1), 300_000);
    this.restartAt.set(uid, now + delayMs);
    this.c.due(now + delayMs, now);
    this.startedAt.delete(uid);
    const finishedAt = kubeTime(now);
    for (const type of ['ContainersReady', 'Ready'])
      setCondition(status, type, 'False', 'ContainersNotReady', '', now);
    status.containerStatuses = (pod.spec.containers ?? []).map((c: any) => ({
      name: c.name,
      image: c.image,
      imageID: `${c.image}@sha256:test`,
      restartCount: restarts,
      ready: false,
      started: false,
      state: {
        waiting: {
          reason: 'CrashLoopBackOff',
          message: `back-off ${delayMs / 1000}s restarting failed container=${c.name} pod=${name}_${namespace}(${uid})`,
        },
      },
      lastState: { terminated: { exitCode, reason, startedAt: status.startTime ?? finishedAt, finishedAt } },
    }));
    this.output.ended(pod, exitCode, reason);
    this.c.events.record(pod, 'Warning', 'BackOff', 'Back-off restarting failed container', this.source(pod));
    this.write(pod, status);
  }

  /** Writes the pod's end: its phase by the exit code, every container terminated with it. */
  private finish(pod: any, status: any, now: number, exitCode: number, reason: string): void {
    const phase = exitCode === 0 ? 'Succeeded' : 'Failed';
    this.output.ended(pod, exitCode, reason);
    const finishedAt = kubeTime(now);
    status.phase = phase;
    for (const type of ['ContainersReady', 'Ready'])
      setCondition(status, type, 'False', phase === 'Succeeded' ? 'PodCompleted' : 'PodFailed', '', now);
    status.containerStatuses = (pod.spec.containers ?? []).map((c: any) => ({
      name: c.name,
      image: c.image,
      imageID: `${c.image}@sha256:test`,
      restartCount: 0,
      ready: false,
      started: false,
      state: {
        terminated: {
          exitCode,
          reason,
          startedAt: status.startTime ?? finishedAt,
          finishedAt,
          ...(exitCode === 1 ? { message: `the test workload failed (${ANNOTATION_OUTCOME}: fail)` } : {}),
        },
      },
    }));
    this.write(pod, status);
  }

  /** The containers started: the kubelet's Events (the image is on the node at once) and the workload's first output. */
  private containersStarted(pod: any, now: number, boundAt: number): void {
    const took = `${Math.max(1, now - boundAt)}ms`;
    for (const c of pod.spec.containers ?? []) {
      const source = this.source(pod);
      const pulled = `Successfully pulled image "${c.image}" in ${took} (${took} including waiting). Image size: 0 bytes.`;
      this.c.events.record(pod, 'Normal', 'Pulled', pulled, source);
      this.c.events.record(pod, 'Normal', 'Created', `Created container ${c.name}`, source);
      this.c.events.record(pod, 'Normal', 'Started', `Started container ${c.name}`, source);
    }
    this.output.started(pod, now);
  }

  /** A pod being deleted: SIGTERM, its exit (or SIGKILL at the end of the grace period), then its removal. */
  private terminate(pod: any, now: number): void {
    const { namespace, name, uid } = pod.metadata;
    const remove = () =>
      this.c.write(() => this.c.store.delete('Pod', namespace, name, { gracePeriodSeconds: 0 }));
    if (pod.status?.phase !== 'Running') return void remove(); // nothing started yet: the sandbox just goes
    if (this.restartAt.has(uid)) {
      // In back-off: no process to signal.
      this.finish(pod, structuredClone(pod.status), now, 143, 'Error');
      return void remove();
    }
    let sigterm = this.sigtermAt.get(uid);
    if (sigterm === undefined) {
      sigterm = now;
      this.sigtermAt.set(uid, now);
      for (const c of pod.spec.containers ?? [])
        this.c.events.record(pod, 'Normal', 'Killing', `Stopping container ${c.name}`, this.source(pod));
      this.output.sigterm(pod);
    }
    this.output.tick(pod, now);
    const graceMs = (pod.metadata.deletionGracePeriodSeconds ?? 30) * 1000;
    const exitMs = Number(workloadSetting(pod, ANNOTATION_SIGTERM_MS, 'FAIRWAY_TEST_SIGTERM_MS') ?? 0);
    const killed = exitMs >= graceMs;
    const exitAt = sigterm + Math.min(exitMs, graceMs);
    // Once signalled, the workload exits when its SIGTERM handling is done, whatever its run time was.
    if (!this.c.due(exitAt, now)) return;
    const outcome = workloadSetting(pod, ANNOTATION_OUTCOME, 'FAIRWAY_TEST_OUTCOME');
    const code = killed ? 137 : outcome === 'success' ? 0 : 143;
    this.finish(pod, structuredClone(pod.status), now, code, code === 0 ? 'Completed' : 'Error');
    remove();
  }
}
