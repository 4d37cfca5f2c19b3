/**
 * A Kubernetes API server for tests: enough of the REST + watch protocol for
 * @kubernetes/client-node 1.4.0 to work against it unmodified, as strict as a real one about what
 * it stores, and a small control plane (Job, Deployment, ReplicaSet and HorizontalPodAutoscaler
 * controllers, scheduler, kubelet, pod GC, quota controller, and the JobSet / PyTorchJob / RayCluster /
 * RayJob controllers while their CRDs are installed) so Jobs, Deployments and those workloads actually
 * run. See test/backends/kubernetes/test-api-server*.test.ts for what it is checked to do. Not for
 * production code.
 *
 * Behaviour worth knowing (as on a real cluster unless said otherwise):
 * - kinds: Namespace, Node, Pod (+ pods/eviction), Service, Event (core v1, and events.k8s.io/v1 as a
 *   view of the same objects), ServiceAccount, ResourceQuota, LimitRange, Job, NetworkPolicy,
 *   PriorityClass (system-cluster-critical / system-node-critical exist), Lease, Deployment and ReplicaSet
 *   (apps/v1, with /status and /scale: an autoscaling/v1 Scale), HorizontalPodAutoscaler (autoscaling/v2);
 *   all in discovery;
 * - list items carry no apiVersion/kind; watch event objects do; a watch without resourceVersion starts
 *   with synthetic ADDED events; allowWatchBookmarks=true adds a BOOKMARK (only metadata.resourceVersion)
 *   every `bookmarkIntervalMs`;
 * - every write is defaulted (a Job's generated selector and controller-uid / job-name template labels,
 *   a user-set selector refused unless manualSelector; backoffLimit 6, completionMode NonIndexed,
 *   parallelism/completions 1, podReplacementPolicy; a Job without labels takes its template's; pods:
 *   restartPolicy Always, terminationGracePeriodSeconds 30, requests from limits, qosClass, …; a Service's
 *   clusterIP, unless `None`), then validated: kubernetes-models' schemas, unknown fields (422, like
 *   fieldValidation=Strict), names (DNS-1123 subdomain; Namespace DNS-1123 label; Service DNS-1035 label;
 *   a Job's name is its pods' job-name label so ≤ 63, and `<name>-<completions-1>` of an Indexed Job a
 *   DNS label), labels, Job rules (restartPolicy Never/OnFailure, podFailurePolicy);
 * - a pod create passes admission: LimitRanger (the namespace's container defaults, min/max), Priority
 *   (spec.priority from its class, the globalDefault class or 0; an unknown class → 403), PodSecurity
 *   (the namespace's `pod-security.kubernetes.io/enforce` level, 403 `violates PodSecurity
 *   "restricted:latest": …`), ResourceQuota (403 `exceeded quota`); pods the Job controller cannot create
 *   are a FailedCreate Event and an entry in `controllerProblems`, retried every 200 ms;
 * - a namespaced object can only be created in an existing Namespace that is not terminating ('default',
 *   'kube-system', 'kube-public', 'kube-node-lease' exist); deleting a Namespace makes it Terminating until
 *   its content is gone;
 * - a Job's pod template is immutable once started; while it is suspended and status.startTime is unset
 *   (the Job controller clears it once the suspended Job's pods are gone, `jobControllerDelayMs` later)
 *   labels, annotations, nodeSelector, tolerations, affinity, schedulingGates may change;
 * - a pod's spec is immutable but for images, activeDeadlineSeconds, added tolerations, removed
 *   schedulingGates and, while gated, added nodeSelector / node affinity; a gated pod stays Pending
 *   (PodScheduled=False SchedulingGated);
 * - server-side apply tracks field ownership in metadata.managedFields: an apply changing a field another
 *   manager owns is a 409 Conflict unless force=true; fields a manager stops applying are removed unless
 *   another manager owns them; updates and patches own what they change (operation Update; the manager is
 *   `fieldManager` or the User-Agent's product); maps and keyed lists (containers, env, volumes…) merge,
 *   other lists are atomic;
 * - deleting a bound pod is graceful: deletionTimestamp + deletionGracePeriodSeconds, the pod keeps its node's
 *   resources while its process handles SIGTERM (`fairway.dev/test-sigterm-ms`, default 0), exits 143 (0 with
 *   `fairway.dev/test-outcome: success`) or is killed at the end of the grace (137), ends Failed (Succeeded)
 *   and is removed; gracePeriodSeconds=0, an unbound or a finished pod go at once; `gracefulDeletion: false`
 *   (or no kubelet) deletes at once as this server used to; objects with finalizers wait for them;
 *   Foreground deletion keeps the owner until its dependents are gone;
 * - deleting a Job without propagationPolicy orphans its pods (batch/v1's default): pass 'Background';
 *   deleting a Deployment or ReplicaSet without one deletes its ReplicaSets and pods (apps/v1's default);
 * - Deployments (apps.ts, deployment-controller.ts): defaulted (replicas 1, RollingUpdate 25% / 25%,
 *   revisionHistoryLimit 10, progressDeadlineSeconds 600, the template's pod defaults) and validated in the
 *   real words (422: selector required and matching the template's labels, and immutable; containers;
 *   restartPolicy Always; replicas ≥ 0; a non-integer replicas is the decoder's 400); a ReplicaSet
 *   `<name>-<pod-template-hash>` per template, rolled by maxSurge / maxUnavailable counting available pods
 *   (or Recreate), old ones scaled to 0 and pruned past revisionHistoryLimit; status replicas / updated /
 *   ready / available / unavailable, conditions Available and Progressing;
 * - ReplicaSets (replicaset-controller.ts) keep spec.replicas active pods `<rs>-xxxxx` (a pod deleted,
 *   evicted or failed from outside is replaced at once), remove the surplus gracefully in the upstream order
 *   (pod-ranking.ts: unscheduled, Pending < Unknown < Running, not ready, LOWER
 *   `controller.kubernetes.io/pod-deletion-cost`, doubled up on a node, more recently ready, newer), and
 *   count replicas / fullyLabeled / ready / available (ready for minReadySeconds);
 * - readiness (readiness.ts): a running container without a readinessProbe is ready at once; with one, at
 *   the first probe (every periodSeconds, default 10, from the start) at least initialDelaySeconds after
 *   it starts; `setPodReady(ns, pod, false)` holds a pod not ready (a failing probe), `true` lets go;
 * - HorizontalPodAutoscalers (hpa-controller.ts; minReplicas ≥ 1, maxReplicas ≥ minReplicas,
 *   scaleTargetRef required) set a Deployment / ReplicaSet below minReplicas or above maxReplicas to the
 *   bound through /scale every `hpaSyncMs` (none at 0; no metrics: in range nothing changes), with status
 *   currentReplicas / desiredReplicas / lastScaleTime;
 * - disruptions set the pod condition DisruptionTarget: the Eviction API / `evict` / `drain`
 *   (EvictionByEvictionAPI, then a graceful delete; no PodDisruptionBudgets), a deleted Node (DeletionByPodGC,
 *   Failed, removed at once), `kubeletEvict` (TerminationByKubelet, Failed, reason Evicted, the pod stays),
 *   preemption with `preemption: true` (PreemptionByScheduler; nominatedNodeName);
 * - the Job controller counts each finished pod once: a pod deleted from outside (no podFailurePolicy: as soon
 *   as it is terminating) or Failed is a failure, unless a podFailurePolicy rule says Ignore; FailJob fails the
 *   Job (PodFailurePolicy), more than backoffLimit failures fail it (BackoffLimitExceeded), replacements are
 *   made up to then (without the real 10 s exponential back-off); FailureTarget / SuccessCriteriaMet come
 *   first, Failed / Complete once no pod is left running; pods stopped by a suspension are no failures;
 *   Indexed pods get hostname `<job>-<index>` and the template's subdomain; a refused create is retried;
 * - the scheduler takes higher priority first; `scoring` picks among fitting nodes: 'first-fit' (by name,
 *   the default here), 'least-allocated' (kube-scheduler's default: spreads), 'most-allocated' (packs);
 * - the kubelet gives each running pod a podIP (10.244.x.y); `resolve` answers cluster DNS (headless Service
 *   + hostname/subdomain → the pod's IP while it is ready; a Service → its clusterIP); a container a pod's
 *   restartPolicy restarts (Always, OnFailure) goes into CrashLoopBackOff instead of ending the pod;
 * - the controllers write Events (Scheduled, FailedScheduling, Preempted, SuccessfulCreate, FailedCreate,
 *   SuccessfulDelete, Completed, BackoffLimitExceeded, Suspended, Resumed, Pulling, Pulled, Created, Started,
 *   Killing, Evicted, BackOff…), repeats counted (count, lastTimestamp);
 * - pod logs (pod-logs.ts, workload-output.ts): GET …/pods/{name}/log with container, timestamps, follow,
 *   sinceTime / sinceSeconds, tailLines, limitBytes (404 for a pod that does not exist: the log goes with the
 *   pod; 400 for a container it does not have, or one that has not started); a follow streams new lines and
 *   ends when the container does; the kubelet writes a start line, what FAIRWAY_TEST_LOG_LINES /
 *   FAIRWAY_TEST_LOG_EVERY_MS / FAIRWAY_TEST_LOG_TEXT ask, `received SIGTERM` and a last line by the exit;
 *   `writeLog` appends raw bytes, `cutLogStreams` cuts open follows;
 * - ResourceQuota: status.used is kept; after dropWatches()/setDown(true), client-node's informer emits
 *   'error' ("Premature close") and does NOT restart by itself: the caller must start() it again (it resumes
 *   from its resourceVersion).
 *
 * Custom resources (crds.ts, crd-schema.ts; option `crds`, `installCrd`, or a POST of a
 * CustomResourceDefinition, apiextensions.k8s.io/v1, shortNames crd/crds):
 * - each served version of an installed CRD is in discovery (/apis, /apis/<group> with its preferred
 *   version, /apis/<group>/<version>: plural, singularName, namespaced, kind, verbs, shortNames,
 *   categories, `/status` and `/scale` when declared); its objects have the usual paths (namespaced and the
 *   cluster-wide list), list / watch / selectors / resourceVersion / bookmarks as for built-in kinds; they
 *   are stored in the storage version and served in the one asked for (conversion None); a kind whose CRD
 *   is not installed is 404 and absent from discovery; deleting a CRD deletes its objects;
 * - every write is decoded as apiextensions does: unknown fields pruned (a `Warning: 299 - "unknown field
 *   \"spec.x\""` header: fieldValidation Warn is the default, client-node sends none; Ignore; Strict → 400
 *   `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: unknown field "spec.x"`;
 *   the server's own writes are always strict), x-kubernetes-preserve-unknown-fields and
 *   x-kubernetes-embedded-resource honoured, schema defaults applied, then validated with ajv
 *   (422 `<Kind>.<group> "<name>" is invalid: spec.x: Invalid value: …`), with int-or-string, list-type
 *   set/map uniqueness and the CEL rule `self == oldSelf` (other CEL rules are not evaluated; formats
 *   are not checked); with a status subresource, a write to the main resource ignores status and /status
 *   changes only status; strategic merge patch is refused (415) as for any custom resource;
 * - the workload webhooks (crd-controllers/webhooks.ts): JobSet's defaulting and validation (names,
 *   replicatedJobs immutable but for the pod templates' labels, annotations, nodeSelector, tolerations and
 *   schedulingGates while suspended), PyTorchJob's validation (403 `admission webhook … denied the request`);
 * - the controllers (crd-controllers/), writing through the store, their pods admitted, scheduled and run
 *   like a Job's: JobSet (child Jobs `<jobset>-<rjob>-<i>`, jobset.sigs.k8s.io labels, headless Service,
 *   suspend / resume taking the changed scheduling directives, Completed / Failed / restarts, GC);
 *   PyTorchJob (pods and Services `<name>-master-0` / `<name>-worker-<i>`, training.kubeflow.org labels, the
 *   operator's env and its init container `init-pytorch` for workers, which Pod Security "restricted" refuses
 *   unless `pytorchInitContainerTemplate` gives a compliant one; suspend, Created / Running / Restarting /
 *   Succeeded / Failed by restartPolicy and backoffLimit); RayCluster (head and worker pods, `<name>-head-svc`, ray.io labels and
 *   env, suspend, state ready / suspended and KubeRay's conditions); RayJob (its own RayCluster, a simulated
 *   Ray job run by the head container's FAIRWAY_TEST_RUN_MS / FAIRWAY_TEST_OUTCOME (default run time: the
 *   kubelet's defaultRunMs), jobStatus /
 *   jobDeploymentStatus, suspend, shutdownAfterJobFinishes). Ray pods run until stopped. RayService,
 *   LeaderWorkerSet and TrainJob are served without a controller.
 */
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { stringify as toYaml } from 'yaml';
import { Controllers, type KubeletOptions, type Scoring } from './controllers.js';
import { loadCrdFiles, parseCrds } from './crds.js';
import { drainNode, evictPod, kubeletEvictPod } from './disruption.js';
import { resolveName } from './dns.js';
import { createApiHttpServer, type ServerState, TEST_TOKEN, type WriteRecord } from './server.js';
import { Store } from './store.js';
import { Watches } from './watch.js';

export type { KubeletOptions, Scoring } from './controllers.js';
export { ANNOTATION_OUTCOME, ANNOTATION_RUN_MS, ANNOTATION_SIGTERM_MS } from './controllers.js';
export type { WriteRecord } from './server.js';
export { TEST_TOKEN } from './server.js';

export interface KubeApiServerOptions {
  /** Validate every stored object with kubernetes-models (and refuse unknown fields). Default true. */
  validate?: boolean;
  /** false: pods are created and scheduled but never start. Default: { startDelayMs: 20 }. */
  kubelet?: KubeletOptions | false;
  /** Events kept for watch resume; a watch from an older resourceVersion gets 410. Default 1000. */
  watchHistory?: number;
  /**
   * false: a deleted pod goes at once (no deletionTimestamp, no SIGTERM, no grace period), as this server
   * did before it modelled graceful termination. Default true (what a real cluster does); without a
   * kubelet there is no one to stop pods, so deletion is immediate then.
   */
  gracefulDeletion?: boolean;
  /** How the scheduler picks among the nodes a pod fits. Default 'first-fit' (by node name). */
  scoring?: Scoring;
  /** The scheduler preempts lower-priority pods for a pod that fits no node. Default false. */
  preemption?: boolean;
  /** A slow Job controller: a suspended Job's status.startTime is cleared this long after its pods are gone. Default 0. */
  jobControllerDelayMs?: number;
  /** How often the HorizontalPodAutoscaler controller syncs each HPA (a real one: 15 s). Default 1000. */
  hpaSyncMs?: number;
  /** How often a watch asking allowWatchBookmarks=true gets a BOOKMARK. Default 1000. */
  bookmarkIntervalMs?: number;
  /** The port to listen on (127.0.0.1). Default 0: any free port. */
  port?: number;
  /**
   * CustomResourceDefinitions to serve from the start: YAML files, or directories whose `*.yaml` are all
   * loaded (e.g. `../shared/kubernetes/crds`). More can be installed later (installCrd, or a POST of a
   * CustomResourceDefinition). A kind's controller runs while its CRD is installed.
   */
  crds?: string[] | string;
  /**
   * The Training Operator's --pytorch-init-container-template-file: the init container it gives the workers
   * of a PyTorchJob with a Master; string fields may use {{.MasterAddr}}, {{.InitContainerImage}} and
   * {{.MaxTries}}. Default: the operator's own (alpine:3.10 waiting for the master's DNS name, without a
   * securityContext, so Pod Security "restricted" refuses those workers, as on a real cluster).
   */
  pytorchInitContainerTemplate?: object;
}

export interface KubeApiServer {
  /** http://127.0.0.1:<port> */
  url: string;
  /** A kubeconfig pointing at url (bearer token 'test-token', plain http). */
  kubeconfigYaml: string;
  writeKubeconfig(path: string): void;
  /** Every write through HTTP the server accepted or refused, in order. */
  writes: WriteRecord[];
  /** Validation failures seen (each also answered with 422, or kept from the controllers' own writes). */
  invalid: { kind: string; name: string; errors: string }[];
  /** Writes the controllers could not make (a pod refused by a ResourceQuota, an invalid pod), newest last.
   *
   */
  controllerProblems: string[];
  /** Current objects of a kind (deep copies, with apiVersion and kind), optionally of one namespace. */
  objects(kind: string, namespace?: string): any[];
  get(kind: string, namespace: string | undefined, name: string): any | undefined;
  /**
   * Creates or replaces an object as an operator would (validated too; throws on an invalid one).
   * Unlike a client's write it sets status as given (a Node's allocatable, say). Returns the stored copy.
   */
  put(obj: any): any;
  /**
   * Deletes an object as a client would (dependents in the background; a bound pod gracefully unless
   * gracePeriodSeconds is 0; a Node at once: its pods are then garbage-collected); throws if there is none.
   */
  remove(
    kind: string,
    namespace: string | undefined,
    name: string,
    options?: { gracePeriodSeconds?: number },
  ): void;
  /** The Eviction API for one pod (DisruptionTarget EvictionByEvictionAPI, then a graceful delete). */
  evict(namespace: string, pod: string): void;
  /** `kubectl drain`: cordons the node and evicts its pods; returns them as `namespace/name`. */
  drain(nodeName: string): string[];
  /**
   * Holds a running pod not ready (`false`: as if its readinessProbe failed: containerStatuses[].ready and
   * the Ready condition False, reason ContainersNotReady) or lets its probes decide again (`true`). The pod,
   * its ReplicaSet's and Deployment's status say so when this returns. Throws for an unknown pod.
   */
  setPodReady(namespace: string, pod: string, ready: boolean): void;
  /** Node-pressure eviction by the kubelet: the pod is killed and stays Failed (reason Evicted). */
  kubeletEvict(namespace: string, pod: string, resource?: string): void;
  /**
   * Cluster DNS (A record) as seen from a pod of `fromNamespace` (default 'default'):
   * `<hostname>.<subdomain>[.<namespace>[.svc[.cluster.local]]]` → the pod's IP when a headless Service
   * `<subdomain>` selects it and it is ready; `<service>[.<namespace>…]` → a Service's clusterIP.
   */
  resolve(name: string, fromNamespace?: string): string | undefined;
  /**
   * Installs (or updates) CustomResourceDefinitions, as `kubectl apply -f crd.yaml` would: YAML text (one
   * or more documents) or an object. Returns their names.
   */
  installCrd(yamlOrObject: string | object): string[];
  /** Deletes a CustomResourceDefinition by name (`jobsets.jobset.x-k8s.io`); its objects go with it. */
  uninstallCrd(name: string): void;
  /** Ends every open watch with a 410 Expired ERROR event and forgets history, so clients must relist. */
  expireWatches(): void;
  /** Drops open watch connections without an event (a network cut). */
  dropWatches(): void;
  /**
   * Appends to a container's log as its process would write it (default: the pod's first container): raw
   * bytes as they are (invalid UTF-8, very long lines); the lines of one call share a timestamp.
   */
  writeLog(namespace: string, pod: string, data: string | Buffer, container?: string): void;
  /** Cuts every open pod log stream (follow=true) without an end, as a network cut; returns how many. */
  cutLogStreams(): number;
  /** Open pod log streams right now. */
  readonly openLogStreams: number;
  /** Makes every request fail with 503 (and cuts open watches and log streams) until setDown(false). */
  setDown(down: boolean): void;
  /** Count of HTTP requests served (including refused ones). */
  readonly requests: number;
  /** Open watch streams right now. */
  readonly openWatches: number;
  close(): Promise<void>;
}

export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const kubelet = options.kubelet === false ? false : { startDelayMs: 20, ...options.kubelet };
  const store = new Store({
    validate: options.validate ?? true,
    historyLimit: options.watchHistory ?? 1000,
    gracefulPods: kubelet !== false && options.gracefulDeletion !== false,
  });
  for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
    store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, 'system');
  // The classes every API server creates for itself.
  for (const [name, value] of [
    ['system-cluster-critical', 2000000000],
    ['system-node-critical', 2000001000],
  ] as const)
    store.create(
      {
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name },
        value,
        preemptionPolicy: 'PreemptLowerPriority',
        description: 'Used for system critical pods that must not be moved from their current node.',
      },
      'system',
    );
  const install = (crds: any[]): string[] =>
    crds.map((crd) => {
      const existing = store.get('CustomResourceDefinition', undefined, crd.metadata?.name);
      if (!existing) return store.create(crd, 'system').metadata.name;
      const { resourceVersion: _rv, ...metadata } = crd.metadata;
      return store.replace({ ...crd, metadata }, 'system').metadata.name;
    });
  if (options.crds !== undefined) install(loadCrdFiles(options.crds));
  const watches = new Watches(store);
  const controllers = new Controllers(store, {
    kubelet,
    scoring: options.scoring ?? 'first-fit',
    preemption: options.preemption ?? false,
    jobControllerDelayMs: options.jobControllerDelayMs ?? 0,
    hpaSyncMs: options.hpaSyncMs ?? 1000,
    ...(options.pytorchInitContainerTemplate
      ? { pytorchInitContainerTemplate: options.pytorchInitContainerTemplate }
      : {}),
  });
  const state: ServerState = {
    store,
    watches,
    writes: [],
    requests: 0,
    down: false,
    events: controllers.events,
    logs: controllers.logs,
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 1000,
  };
  const http = createApiHttpServer(state);
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const kubeconfigYaml = toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    // client-node refuses plain http unless TLS verification is (nominally) skipped.
    clusters: [{ name: 'test', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'test', user: { token: TEST_TOKEN } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: 'test', namespace: 'default' } }],
    'current-context': 'test',
  });

  return {
    url,
    kubeconfigYaml,
    writeKubeconfig: (path) => writeFileSync(path, kubeconfigYaml),
    writes: state.writes,
    invalid: store.invalid,
    controllerProblems: controllers.problems,
    objects: (kind, namespace) => store.list(kind, namespace),
    get: (kind, namespace, name) => store.get(kind, namespace, name),
    put: (obj) => {
      const namespace = store.type(obj.kind).namespaced ? obj.metadata?.namespace : undefined;
      const existing = store.get(obj.kind, namespace, obj.metadata?.name);
      if (!existing) return store.create(obj, 'system');
      const { resourceVersion: _ignored, ...metadata } = obj.metadata;
      return store.replace({ ...obj, metadata }, 'system');
    },
    remove: (kind, namespace, name, opts = {}) => void store.delete(kind, namespace, name, opts),
    evict: (namespace, pod) => evictPod(controllers, namespace, pod),
    drain: (nodeName) => drainNode(controllers, nodeName),
    kubeletEvict: (namespace, pod, resource) => kubeletEvictPod(controllers, namespace, pod, resource),
    setPodReady: (namespace, pod, ready) => controllers.setPodReady(namespace, pod, ready),
    resolve: (name, fromNamespace) => resolveName(store, name, fromNamespace),
    installCrd: (yamlOrObject) => install(parseCrds(yamlOrObject)),
    uninstallCrd: (name) => void store.delete('CustomResourceDefinition', undefined, name),
    expireWatches: () => {
      watches.expireAll();
      store.compact();
    },
    dropWatches: () => watches.dropAll(),
    writeLog: (namespace, name, data, container) => {
      const pod = store.peek('Pod', namespace, name);
      if (!pod) throw new Error(`no pod ${namespace}/${name}`);
      controllers.logs.write(pod, container ?? pod.spec.containers[0].name, data);
    },
    cutLogStreams: () => controllers.logs.cut(),
    setDown: (down) => {
      state.down = down;
      if (down) {
        watches.dropAll();
        controllers.logs.cut();
      }
    },
    get requests() {
      return state.requests;
    },
    get openWatches() {
      return watches.count;
    },
    get openLogStreams() {
      return controllers.logs.streams;
    },
    close: async () => {
      controllers.close();
      watches.dropAll();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
