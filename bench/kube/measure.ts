// What a Kubernetes burst is measured by on the cluster side: the test API server's write log
// (every write it received over HTTP, i.e. Fairway's: its controllers write through the store, not
// HTTP) and the objects the tenant's namespace holds at the end (Fairway's and the controllers').

import { CUSTOM_WORKLOADS } from '../../src/backends/kubernetes/workload-kinds.js';
import type { KubeApiServer, WriteRecord } from '../../test/helpers/kube-api-server/index.js';
import { CUSTOM_KINDS, type Shape, workloadObjectKind } from './workloads.js';

/** The tenant namespace of aurora-research (Fairway's naming). */
export const TENANT_NS = 'fairway-aurora-research';

/** `fw-<job id>` (a custom object, a gang's headless Service) or `fw-<job id>-<pod set>` (a Job) → the job id. */
const JOB_ID = /^fw-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:-\d+)?$/;

const created = (w: WriteRecord) => w.verb === 'create' && w.status === 201;

/** The creates of the workload's own object (Job; custom kinds: their object) among `writes`. */
export function workloadCreates(writes: readonly WriteRecord[], shape: Shape): WriteRecord[] {
  const kind = workloadObjectKind(shape);
  return writes.filter((w) => w.kind === kind && created(w));
}

/** Per job id: when the first object named after it was created (a gang's Service comes before its Job). */
export function firstObjectAt(writes: readonly WriteRecord[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const w of writes) {
    const id = created(w) ? JOB_ID.exec(w.name)?.[1] : undefined;
    if (id !== undefined && !out.has(id)) out.set(id, w.at);
  }
  return out;
}

/** Kinds counted in the tenant's namespace at the end. */
const COUNTED = ['Job', 'Pod', 'Service', ...CUSTOM_KINDS.map((k) => CUSTOM_WORKLOADS[k].crdKind), 'Event'];

export interface KubeFigures {
  writes: number;
  /** Writes to the workload's own kind (Job, or the custom kind), all verbs. */
  objectWrites: number;
  writesByKindVerb: Record<string, number>;
  refused: number;
  requests: number;
  invalid: number;
  controllerProblems: number;
  /** The first few of the controllers' problems and of the validation failures, as the server said them. */
  problemSamples: string[];
  /** Objects of COUNTED kinds in the tenant namespace at the end, Events aside, and by kind. */
  objectsAtEnd: number;
  objectsByKind: Record<string, number>;
  resourceQuotaGpus: string;
  setupWrites: number;
}

export function kubeFigures(
  kube: KubeApiServer,
  shape: Shape,
  since: { writes: number; requests: number },
  resourceQuotaGpus: string,
): KubeFigures {
  const during = kube.writes.slice(since.writes);
  const kind = workloadObjectKind(shape);
  const writesByKindVerb: Record<string, number> = {};
  for (const w of during) {
    const key = `${w.kind} ${w.verb} ${w.status}`;
    writesByKindVerb[key] = (writesByKindVerb[key] ?? 0) + 1;
  }
  const objectsByKind: Record<string, number> = {};
  for (const k of COUNTED) {
    const n = kube.objects(k, TENANT_NS).length;
    if (n) objectsByKind[k] = n;
  }
  return {
    writes: during.length,
    objectWrites: during.filter((w) => w.kind === kind).length,
    writesByKindVerb,
    refused: during.filter((w) => w.status >= 400).length,
    requests: kube.requests - since.requests,
    invalid: kube.invalid.length,
    controllerProblems: kube.controllerProblems.length,
    problemSamples: [
      ...kube.controllerProblems.slice(0, 3),
      ...kube.invalid.slice(0, 3).map((v) => `invalid ${v.kind} ${v.name}: ${v.errors}`),
    ].map((m) => m.slice(0, 300)),
    objectsAtEnd: Object.entries(objectsByKind)
      .filter(([k]) => k !== 'Event')
      .reduce((s, [, n]) => s + n, 0),
    objectsByKind,
    resourceQuotaGpus,
    setupWrites: since.writes,
  };
}
