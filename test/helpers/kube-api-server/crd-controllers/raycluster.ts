/**
 * The RayCluster controller of KubeRay (ray-operator/controllers/ray/raycluster_controller.go), while the
 * RayCluster CRD is installed:
 * - the head Service `<name>-head-svc` (headless, publishNotReadyAddresses; the head container's named
 *   ports, else client 10001 / gcs-server 6379 / dashboard 8265 / serve 8000, and metrics 8080), selecting
 *   ray.io/cluster, ray.io/node-type head, ray.io/identifier and the app.kubernetes.io labels;
 * - one head pod `<name>-head-xxxxx` and, per workerGroupSpec, replicas (clamped to min/maxReplicas, × numOfHosts;
 *   0 when the group is suspended) worker pods `<name>-<group>-worker-xxxxx`, owned by the RayCluster, labelled
 *   ray.io/cluster, ray.io/node-type (head / worker), ray.io/group (headgroup / the group name),
 *   ray.io/is-ray-node: yes, ray.io/identifier, app.kubernetes.io/name: kuberay,
 *   app.kubernetes.io/created-by: kuberay-operator, annotated ray.io/ft-enabled; the Ray container (the first)
 *   gets the metrics port 8080 and RAY_CLUSTER_NAME, RAY_CLUSTER_NAMESPACE, RAY_CLOUD_INSTANCE_ID,
 *   RAY_NODE_TYPE_NAME (field refs), KUBERAY_GEN_RAY_START_CMD, RAY_PORT, RAY_ADDRESS (head 127.0.0.1:6379,
 *   workers `<head-svc>.<ns>.svc.cluster.local:6379` with FQ_RAY_IP / RAY_IP), RAY_USAGE_STATS_KUBERAY_IN_USE,
 *   RAY_USAGE_STATS_EXTRA_TAGS (head), RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE; workers get the init container
 *   `wait-gcs-ready`; a finished pod is deleted and replaced, extra workers are deleted;
 * - spec.suspend: RayClusterSuspending, every pod deleted, then RayClusterSuspended and state `suspended`;
 *   resuming: Suspended False, pods created again;
 * - status: state `ready` once every pod runs and is ready (kept after), readyWorkerReplicas,
 *   availableWorkerReplicas, desired/min/maxWorkerReplicas, desiredCPU / desiredMemory / desiredGPU /
 *   desiredTPU, head {podIP, podName, serviceName}, endpoints, observedGeneration, stateTransitionTimes,
 *   lastUpdateTime, conditions HeadPodReady, RayClusterProvisioned, RayClusterSuspending / Suspended,
 *   ReplicaFailure (a refused pod create). Ray pods run until they are stopped (`ray start --block`).
 * Not modelled: autoscaler, GCS fault tolerance, TLS / auth, ingress, probes, upgrade strategies.
 */
import type { Cluster } from '../cluster.js';
import { kubeTime, terminal } from '../store.js';
import {
  activePod,
  childrenByOwner,
  conditionTrue,
  ownerReference,
  podReady,
  Retries,
  remove,
  setStatusCondition,
  writeStatus,
} from './common.js';
import {
  desiredWorkers,
  headServiceName,
  MAX_INT32,
  podFor,
  podResources,
  quantity,
  RAY_CLUSTER,
  RAY_GROUP,
  RAY_NODE_TYPE,
} from './raycluster-pods.js';

const SOURCE = { component: 'raycluster-controller' };

export class RayClusterController {
  private readonly retries: Retries;
  /** The refused create a cluster waits to retry (its ReplicaFailure stays until a pass succeeds). */
  private readonly failures = new Map<string, [string, string]>();

  constructor(private readonly c: Cluster) {
    this.retries = new Retries(c);
  }

  pass(now: number): void {
    if (!this.c.store.crds.served('RayCluster')) return;
    const pods = childrenByOwner(this.c, 'Pod', 'RayCluster');
    for (const rc of this.c.store.list('RayCluster')) this.sync(rc, pods.get(rc.metadata.uid) ?? [], now);
  }

  private sync(rc: any, pods: any[], now: number): void {
    if (rc.metadata.deletionTimestamp) return;
    if (rc.spec?.managedBy && rc.spec.managedBy !== 'ray.io/kuberay-operator') return;
    const status = structuredClone(rc.status ?? {});
    this.headService(rc, now);
    const uid = rc.metadata.uid;
    const waiting = !this.retries.ready(uid, now);
    const failure = waiting ? this.failures.get(uid) : this.reconcilePods(rc, status, pods, now);
    if (failure) this.failures.set(uid, failure);
    else this.failures.delete(uid);
    const runtime = childrenByOwner(this.c, 'Pod', 'RayCluster').get(rc.metadata.uid) ?? [];
    this.calculateStatus(rc, status, runtime, failure, now);
    writeStatus(this.c, rc, status);
  }

  private headService(rc: any, now: number): void {
    const name = rc.spec.headGroupSpec?.headService?.metadata?.name || headServiceName(rc.metadata.name);
    if (
      this.c.store.peek('Service', rc.metadata.namespace, name) ||
      !this.retries.ready(rc.metadata.uid, now)
    )
      return;
    const labels = {
      [RAY_CLUSTER]: rc.metadata.name,
      [RAY_NODE_TYPE]: 'head',
      'ray.io/identifier': `${rc.metadata.name}-head`,
      'app.kubernetes.io/name': 'kuberay',
      'app.kubernetes.io/created-by': 'kuberay-operator',
    };
    const container = rc.spec.headGroupSpec?.template?.spec?.containers?.[0];
    const ports = new Map<string, number>();
    for (const p of container?.ports ?? []) if (p.name) ports.set(p.name, p.containerPort);
    if (ports.size === 0)
      for (const [k, v] of [
        ['client', 10001],
        ['gcs-server', 6379],
        ['dashboard', 8265],
        ['serve', 8000],
      ] as const)
        ports.set(k, v);
    if (!ports.has('metrics')) ports.set('metrics', 8080);
    const type = rc.spec.headGroupSpec?.serviceType;
    const service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: rc.metadata.namespace, labels, ownerReferences: [ownerReference(rc)] },
      spec: {
        selector: labels,
        ports: [...ports]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([n, port]) => ({ name: n, port, appProtocol: 'tcp' })),
        ...(type ? { type } : {}),
        ...(!type || type === 'ClusterIP' ? { clusterIP: 'None', publishNotReadyAddresses: true } : {}),
      },
    };
    if (this.retries.create(rc, service, SOURCE, now, 'FailedToCreateService'))
      this.c.events.record(
        rc,
        'Normal',
        'CreatedService',
        `Created service ${rc.metadata.namespace}/${name}`,
        SOURCE,
      );
  }

  /** Returns the ReplicaFailure reason and message of a refused create, if any. */
  private reconcilePods(rc: any, status: any, pods: any[], now: number): [string, string] | undefined {
    const { namespace, name } = rc.metadata;
    if (conditionTrue(status, 'RayClusterSuspending')) {
      const going = pods.filter((p) => !p.metadata.deletionTimestamp);
      for (const p of going) remove(this.c, 'Pod', p);
      if (going.length)
        this.c.events.record(
          rc,
          'Normal',
          'DeletedPod',
          `Deleted Pods for RayCluster ${namespace}/${name} due to suspension`,
          SOURCE,
        );
      return undefined;
    }
    if (conditionTrue(status, 'RayClusterSuspended') || rc.spec.suspend === true) return undefined;
    for (const p of pods) if (terminal(p)) remove(this.c, 'Pod', p); // a finished Ray pod is replaced
    const live = pods.filter(activePod);
    const heads = live.filter((p) => p.metadata.labels?.[RAY_NODE_TYPE] === 'head');
    for (const extra of heads.slice(1)) remove(this.c, 'Pod', extra);
    if (
      heads.length === 0 &&
      !pods.some((p) => p.metadata.labels?.[RAY_NODE_TYPE] === 'head' && !terminal(p))
    ) {
      const pod = this.retries.create(rc, podFor(rc, 'head'), SOURCE, now, 'FailedToCreateHeadPod');
      if (!pod) return ['FailedCreateHeadPod', this.retries.lastError];
      this.c.events.record(
        rc,
        'Normal',
        'CreatedHeadPod',
        `Created head Pod ${namespace}/${pod.metadata.name}`,
        SOURCE,
      );
    }
    for (const group of rc.spec.workerGroupSpecs ?? []) {
      const workers = live.filter(
        (p) =>
          p.metadata.labels?.[RAY_NODE_TYPE] === 'worker' &&
          p.metadata.labels?.[RAY_GROUP] === group.groupName,
      );
      const wanted = desiredWorkers(group);
      const doomed = new Set<string>(group.scaleStrategy?.workersToDelete ?? []);
      const extra = workers.length - wanted;
      if (extra > 0) {
        const ordered = [...workers].sort(
          (a, b) =>
            Number(doomed.has(b.metadata.name)) - Number(doomed.has(a.metadata.name)) ||
            String(b.metadata.creationTimestamp).localeCompare(a.metadata.creationTimestamp),
        );
        for (const p of ordered.slice(0, extra)) {
          remove(this.c, 'Pod', p);
          this.c.events.record(
            rc,
            'Normal',
            'DeletedWorkerPod',
            `Deleted worker Pod ${namespace}/${p.metadata.name}`,
            SOURCE,
          );
        }
      }
      for (let i = workers.length; i < wanted; i++) {
        const pod = this.retries.create(
          rc,
          podFor(rc, 'worker', group),
          SOURCE,
          now,
          'FailedToCreateWorkerPod',
        );
        if (!pod) return ['FailedCreateWorkerPod', this.retries.lastError];
        this.c.events.record(
          rc,
          'Normal',
          'CreatedWorkerPod',
          `Created worker Pod ${namespace}/${pod.metadata.name}`,
          SOURCE,
        );
      }
    }
    return undefined;
  }

  private calculateStatus(
    rc: any,
    status: any,
    pods: any[],
    failure: [string, string] | undefined,
    now: number,
  ): void {
    const before = structuredClone(status);
    if (failure)
      setStatusCondition(
        status,
        { type: 'ReplicaFailure', status: 'True', reason: failure[0], message: failure[1] },
        now,
      );
    else status.conditions = (status.conditions ?? []).filter((c: any) => c.type !== 'ReplicaFailure');
    status.observedGeneration = rc.metadata.generation;
    const workers = pods.filter((p) => p.metadata.labels?.[RAY_NODE_TYPE] === 'worker');
    const groups: any[] = rc.spec.workerGroupSpecs ?? [];
    status.readyWorkerReplicas = workers.filter(podReady).length;
    status.availableWorkerReplicas = workers.filter((p) => p.status?.phase === 'Running').length;
    status.desiredWorkerReplicas = groups.reduce((n, g) => n + desiredWorkers(g), 0);
    status.minWorkerReplicas = groups.reduce(
      (n, g) => n + (g.suspend ? 0 : (g.minReplicas ?? 0) * (g.numOfHosts ?? 1)),
      0,
    );
    status.maxWorkerReplicas = groups.reduce(
      (n, g) => n + (g.suspend ? 0 : Math.min(MAX_INT32, (g.maxReplicas ?? MAX_INT32) * (g.numOfHosts ?? 1))),
      0,
    );
    const total = podResources(rc.spec.headGroupSpec?.template?.spec);
    for (const g of groups) {
      if (g.suspend) continue;
      const n = (g.replicas ?? 0) * (g.numOfHosts ?? 1);
      for (const [k, v] of podResources(g.template?.spec)) total.set(k, (total.get(k) ?? 0) + v * n);
    }
    status.desiredCPU = quantity(total.get('cpu') ?? 0, false);
    status.desiredMemory = quantity(total.get('memory') ?? 0, true);
    status.desiredGPU = quantity(
      [...total].filter(([k]) => k.endsWith('gpu')).reduce((n, [, v]) => n + v, 0),
      false,
    );
    status.desiredTPU = quantity(total.get('google.com/tpu') ?? 0, false);
    const allRunning = pods.length > 0 && pods.every(podReady);
    if (!failure && pods.length === status.desiredWorkerReplicas + 1 && allRunning) {
      status.state = 'ready';
      delete status.reason;
    }
    const head = pods.find((p) => p.metadata.labels?.[RAY_NODE_TYPE] === 'head');
    const ready = head?.status?.conditions?.find((c: any) => c.type === 'Ready');
    setStatusCondition(
      status,
      !head
        ? { type: 'HeadPodReady', status: 'False', reason: 'HeadPodNotFound', message: 'Head Pod not found' }
        : {
            type: 'HeadPodReady',
            status: ready?.status === 'True' ? 'True' : 'False',
            reason: ready?.status === 'True' ? 'HeadPodRunningAndReady' : ready?.reason || 'Unknown',
            message: ready?.message ?? '',
          },
      now,
    );
    const suspend = conditionTrue(status, 'RayClusterSuspending')
      ? 'Suspending'
      : conditionTrue(status, 'RayClusterSuspended')
        ? 'Suspended'
        : '';
    if (!conditionTrue(status, 'RayClusterProvisioned') && suspend !== 'Suspended')
      setStatusCondition(
        status,
        allRunning
          ? {
              type: 'RayClusterProvisioned',
              status: 'True',
              reason: 'AllPodRunningAndReadyFirstTime',
              message: 'All Ray Pods are ready for the first time',
            }
          : {
              type: 'RayClusterProvisioned',
              status: 'False',
              reason: 'RayClusterPodsProvisioning',
              message: 'RayCluster Pods are being provisioned for first time',
            },
        now,
      );
    const cond = (type: string, value: 'True' | 'False', message = '') =>
      setStatusCondition(status, { type, status: value, reason: type, message }, now);
    if (suspend === 'Suspending') {
      if (pods.length === 0) {
        setStatusCondition(
          status,
          {
            type: 'RayClusterProvisioned',
            status: 'False',
            reason: 'RayClusterPodsProvisioning',
            message: 'RayCluster has been suspended',
          },
          now,
        );
        cond('RayClusterSuspending', 'False');
        cond('RayClusterSuspended', 'True');
      }
    } else if (suspend === 'Suspended') {
      if (rc.spec.suspend === false || rc.spec.suspend === undefined) cond('RayClusterSuspended', 'False');
    } else {
      cond('RayClusterSuspended', 'False');
      cond('RayClusterSuspending', rc.spec.suspend === true ? 'True' : 'False');
    }
    if (rc.spec.suspend === true && pods.length === 0) status.state = 'suspended';
    const svc = rc.spec.headGroupSpec?.headService?.metadata?.name || headServiceName(rc.metadata.name);
    const service = this.c.store.peek('Service', rc.metadata.namespace, svc);
    if (service) {
      status.endpoints = Object.fromEntries(
        (service.spec.ports ?? []).map((p: any) => [p.name, String(p.port)]),
      );
      status.head = {
        ...(head?.status?.podIP ? { podIP: head.status.podIP } : {}),
        ...(head ? { podName: head.metadata.name } : {}),
        serviceName: svc,
      };
      if (service.spec.clusterIP && service.spec.clusterIP !== 'None')
        status.head.serviceIP = service.spec.clusterIP;
    }
    if (before.state !== status.state)
      status.stateTransitionTimes = { ...status.stateTransitionTimes, [status.state]: kubeTime(now) };
    const { lastUpdateTime: _a, ...was } = before;
    const { lastUpdateTime: _b, ...is } = status;
    if (JSON.stringify(was) !== JSON.stringify(is)) status.lastUpdateTime = kubeTime(now);
  }
}
