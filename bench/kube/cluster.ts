// The cluster side of the Kubernetes bench: the test API server (a test tool, test/helpers/
// kube-api-server: validates every object with kubernetes-models, runs a Job controller, a
// scheduler and a kubelet, and serves the shared CRDs with their JobSet / PyTorchJob / RayJob /
// RayCluster controllers) in this bench's own process, with labelled H100 nodes, and the
// kubeconfig / settings files the gateway is pointed at.
import fs from 'node:fs';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { crdDirectory } from '../../test/helpers/crd-dir.js';
import { Controllers } from '../../test/helpers/kube-api-server/controllers.js';
import { RESTRICTED_PYTORCH_INIT } from '../../test/helpers/kube-api-server/crd-fixtures.js';
import { type KubeApiServer, startKubeApiServer } from '../../test/helpers/kube-api-server/index.js';
import { fieldMatcher, labelMatcher } from '../../test/helpers/kube-api-server/selectors.js';
import { Store } from '../../test/helpers/kube-api-server/store.js';

/** True while the control loop runs a pass (synchronously: no HTTP request is served meanwhile). */
let withinControllerPass = false;

/**
 * The test store's `list` deep-copies every object it returns and sorts with `localeCompare`; the
 * control loop lists every Pod and Job several times a pass (up to 20 passes in a row), and those
 * copies were over half of the bench process's CPU time (profiled at 300 and 1,000 jobs). Here the
 * control loop gets the stored objects themselves (it only reads them: every change it makes goes
 * through store.create/replace/delete on copies, checked in controllers.ts), HTTP lists still get
 * copies, and the sort key is built once per object (code-unit order; list order is not part of
 * the API's contract and Fairway does not depend on it).
 */
function cheaperStoreList(): void {
  const proto = Store.prototype;
  proto.list = function (
    this: Store,
    kind: string,
    namespace?: string,
    labelSelector?: string | null,
    fieldSelector?: string | null,
  ) {
    const labels = labelMatcher(labelSelector);
    const fields = fieldMatcher(fieldSelector);
    const keyed: [string, any][] = [];
    for (const o of this.peekAll(kind, namespace)) {
      if (labels(o) && fields(o)) keyed.push([`${o.metadata.namespace}/${o.metadata.name}`, o]);
    }
    keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return withinControllerPass ? keyed.map(([, o]) => o) : keyed.map(([, o]) => structuredClone(o));
  };
}

interface ControllerLoop {
  timer: NodeJS.Timeout | undefined;
  timerAt: number;
  wakeAt(at: number): void;
  reconcile(): void;
}

/**
 * Paces the test server's control loop (Job controller, scheduler, kubelet) to at most one pass
 * per `paceMs`. As written it runs a pass after every change, and each pass deep-copies every Job
 * and Pod and matches every Job against every Pod (O(jobs × pods)): at a thousand Jobs the passes
 * take the whole bench process and the API's answers to Fairway wait behind them, so the figures
 * would measure the test tool. A real kube-controller-manager runs apart from the API server and
 * works from queues. Patched from here (the bench owns no test file); 0 leaves it as written.
 */
export function paceControllers(paceMs: number): void {
  if (paceMs <= 0) return;
  cheaperStoreList();
  const proto = Controllers.prototype as unknown as ControllerLoop;
  const reconcile = proto.reconcile;
  const lastPass = new WeakMap<object, number>();
  proto.reconcile = function (this: ControllerLoop) {
    const due = (lastPass.get(this) ?? 0) + paceMs;
    if (Date.now() < due) {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.wakeAt(due);
      return;
    }
    lastPass.set(this, Date.now());
    withinControllerPass = true;
    try {
      reconcile.call(this);
    } finally {
      withinControllerPass = false;
    }
  };
}

export const H100_PRODUCT = 'NVIDIA-H100-80GB-HBM3';

/** The settings the backend tests use (test/helpers/kube-app.ts), minus their short not-running timeout. */
const SETTINGS = {
  poolLabel: 'fairway.dev/pool',
  flavors: [
    { flavor: 'a100-1g.10gb', resource: 'nvidia.com/mig-1g.10gb', unitsPerGpu: 7 },
    { flavor: 'h100-80g', resource: 'nvidia.com/gpu', gpuProduct: H100_PRODUCT },
  ],
};

/** A GPU node as the NVIDIA device plugin and GPU feature discovery would label it (as gpuNode in
 * kube-app.ts).
 */
function h100Node(name: string, gpus: number) {
  const allocatable = { cpu: '192', memory: '1Ti', pods: '110', 'nvidia.com/gpu': String(gpus) };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'fairway.dev/pool': 'shared',
        'nvidia.com/gpu.product': H100_PRODUCT,
      },
    },
    spec: {},
    status: { allocatable, capacity: allocatable, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

export interface TestCluster {
  kube: KubeApiServer;
  kubeconfigPath: string;
  settingsPath: string;
}

/**
 * Starts the API server with `nodes` × `gpusPerNode` H100s, serving the shared CRDs (JobSet,
 * PyTorchJob, RayJob, RayCluster…: test/helpers/crd-dir.ts) with their controllers. Pods start 20 ms
 * after binding and run until deleted (no run-time annotation, no FAIRWAY_TEST_RUN_MS, no default run
 * time: a RayJob's Ray job runs until stopped too), so nothing finishes during the burst and admission
 * is never paced by completions.
 */
export async function startTestCluster(
  dir: string,
  nodes: number,
  gpusPerNode: number,
  controllerPaceMs: number,
): Promise<TestCluster> {
  paceControllers(controllerPaceMs);
  const kube = await startKubeApiServer({
    kubelet: { startDelayMs: 20 },
    crds: crdDirectory(),
    pytorchInitContainerTemplate: RESTRICTED_PYTORCH_INIT,
  });
  for (let i = 0; i < nodes; i++)
    kube.put(h100Node(`gpu-h100-${String(i + 1).padStart(3, '0')}`, gpusPerNode));
  const kubeconfigPath = path.join(dir, 'kubeconfig.yaml');
  kube.writeKubeconfig(kubeconfigPath);
  const settingsPath = path.join(dir, 'kubernetes.yaml');
  fs.writeFileSync(settingsPath, toYaml(SETTINGS));
  return { kube, kubeconfigPath, settingsPath };
}
