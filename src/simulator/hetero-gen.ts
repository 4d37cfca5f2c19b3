// A seeded generator of heterogeneous fill inputs in the shape of the public Alibaba GPU
// production trace used by the FGD paper (cluster-trace-gpu-v2023 "openb"): ~1,200 GPU nodes
// of 7 GPU models with different GPUs per node, CPU-only nodes, ~8,000 pods of which ~13% ask
// for no GPU, GPU requests from 0.05 of a device to 8 devices, most pods fractional or one
// GPU, memory-heavy pods, few pods pinning a model. Synthetic: the tables below are chosen to
// resemble that trace's published statistics, they are not its data.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Prng } from './prng.js';

/** One group of identical nodes at scale 1. */
export interface NodeType {
  model: string;
  gpus: number;
  cpuMilli: number;
  memoryMib: number;
  count: number;
}

const GIB = 1024;

/** GPU models and node shapes (scale 1: 1,213 GPU nodes, 6,207 GPUs, plus 310 CPU-only nodes). */
export const NODE_TYPES: readonly NodeType[] = [
  { model: 'G2', gpus: 8, cpuMilli: 96000, memoryMib: 384 * GIB, count: 551 },
  { model: 'T4', gpus: 2, cpuMilli: 104000, memoryMib: 512 * GIB, count: 377 },
  { model: 'T4', gpus: 4, cpuMilli: 96000, memoryMib: 384 * GIB, count: 16 },
  { model: 'P100', gpus: 2, cpuMilli: 16000, memoryMib: 120 * GIB, count: 120 },
  { model: 'P100', gpus: 2, cpuMilli: 64000, memoryMib: 256 * GIB, count: 22 },
  { model: 'P100', gpus: 1, cpuMilli: 8000, memoryMib: 60 * GIB, count: 4 },
  { model: 'G3', gpus: 8, cpuMilli: 128000, memoryMib: 768 * GIB, count: 36 },
  { model: 'V100M32', gpus: 8, cpuMilli: 96000, memoryMib: 768 * GIB, count: 22 },
  { model: 'V100M32', gpus: 4, cpuMilli: 48000, memoryMib: 368 * GIB, count: 10 },
  { model: 'V100M16', gpus: 8, cpuMilli: 64000, memoryMib: 256 * GIB, count: 8 },
  { model: 'V100M16', gpus: 4, cpuMilli: 32000, memoryMib: 128 * GIB, count: 26 },
  { model: 'V100M16', gpus: 1, cpuMilli: 8000, memoryMib: 32 * GIB, count: 19 },
  { model: 'A10', gpus: 1, cpuMilli: 128000, memoryMib: 1024 * GIB, count: 2 },
  { model: 'cpu', gpus: 0, cpuMilli: 32000, memoryMib: 256 * GIB, count: 310 },
];

/** Flavor declaration order in the queue (the old core took the first that fits). */
export const MODEL_ORDER = ['G2', 'T4', 'P100', 'G3', 'V100M32', 'V100M16', 'A10', 'cpu'];

type Weighted<T> = readonly (readonly [T, number])[];

/** Pod classes by GPUs per pod (0 = CPU-only, 'frac' = a share of one GPU) and their share of pods. */
export const POD_CLASSES: Weighted<0 | 'frac' | 1 | 2 | 4 | 8> = [
  [0, 13],
  ['frac', 38],
  [1, 45.5],
  [2, 1.5],
  [4, 1],
  [8, 1],
];

/** Fractional shares in milli-GPU (the trace's shares cluster on a few values). */
export const FRACTIONS: Weighted<number> = [
  [50, 2],
  [100, 3],
  [110, 3],
  [160, 4],
  [200, 4],
  [220, 8],
  [230, 4],
  [250, 5],
  [270, 3],
  [300, 4],
  [320, 8],
  [400, 5],
  [440, 3],
  [460, 10],
  [470, 8],
  [480, 3],
  [500, 8],
  [550, 4],
  [590, 2],
  [600, 3],
  [650, 3],
  [700, 2],
  [750, 2],
  [810, 4],
  [900, 2],
];

/** Per-pod [cpu milli, memory MiB] profiles by pod class, with weights. */
export const PROFILES: Record<string, Weighted<readonly [number, number]>> = {
  '0': [
    [[8000, 30517], 8],
    [[12500, 65536], 3],
    [[20000, 65536], 3],
    [[32000, 65536], 3],
    [[4000, 8192], 3],
    [[16000, 131072], 2],
  ],
  frac: [
    [[1000, 2048], 3],
    [[3152, 5600], 8],
    [[4000, 15258], 20],
    [[4152, 10600], 8],
    [[6000, 12288], 12],
    [[6000, 18432], 5],
    [[8000, 30517], 22],
    [[11908, 47104], 6],
    [[4000, 30517], 6],
    [[6000, 22888], 4],
  ],
  '1': [
    [[3152, 5600], 9],
    [[4000, 16384], 6],
    [[4000, 24576], 5],
    [[4000, 31250], 4],
    [[8000, 16384], 10],
    [[8000, 32768], 6],
    [[8000, 65536], 5],
    [[12000, 16384], 12],
    [[12000, 24576], 8],
    [[12000, 49152], 4],
    [[16000, 32768], 17],
    [[16000, 49152], 5],
    [[16000, 65536], 7],
    [[18708, 64512], 11],
    [[11908, 47104], 4],
    [[9810, 41560], 2],
    [[15700, 58368], 2],
  ],
  '2': [
    [[16000, 65536], 3],
    [[24000, 98304], 2],
    [[32000, 131072], 2],
  ],
  '4': [
    [[32000, 131072], 2],
    [[48000, 196608], 2],
    [[24000, 98304], 1],
  ],
  '8': [
    [[88000, 327680], 3],
    [[64000, 262144], 2],
    [[96000, 393216], 1],
  ],
};

export interface HeteroOptions {
  seed: number;
  /** Multiplies node counts (each node type keeps at least one node) and the pod count. Default 1. */
  scale?: number;
  /** Pods in the trace at scale 1 (default 8,000). */
  pods?: number;
  /** Share of GPU pods that pin one GPU model (default 0.05). */
  pinned?: number;
}

export interface HeteroPod {
  id: string;
  /** GPUs per pod: 0, a share < 1, or whole GPUs. */
  gpus: number;
  cpuMilli: number;
  memoryMib: number;
  model?: string;
  submitS: number;
  durationS: number;
}

export interface HeteroInput {
  nodes: (NodeType & { name: string })[];
  pods: HeteroPod[];
}

function pick<T>(rng: Prng, table: Weighted<T>): T {
  let total = 0;
  for (const [, w] of table) total += w;
  let u = rng.next() * total;
  for (const [v, w] of table) {
    u -= w;
    if (u < 0) return v;
  }
  return table[table.length - 1]![0];
}

/** The cluster (nodes by type, scaled) and the pods, deterministic for a seed and scale. */
export function generateHetero(o: HeteroOptions): HeteroInput {
  const scale = o.scale ?? 1;
  if (!(scale > 0)) throw new Error(`scale must be positive, got ${scale}`);
  const pinned = o.pinned ?? 0.05;
  const rng = new Prng(o.seed);
  const nodes = NODE_TYPES.map((t, i) => ({
    ...t,
    count: Math.max(1, Math.round(t.count * scale)),
    name: `${t.model.toLowerCase()}-${t.gpus}g-${i}`,
  }));
  const nPods = Math.max(1, Math.round((o.pods ?? 8000) * scale));
  const pods: HeteroPod[] = [];
  let t = 0;
  for (let i = 0; i < nPods; i++) {
    const cls = pick(rng, POD_CLASSES);
    const [cpuMilli, memoryMib] = pick(rng, PROFILES[String(cls)]!);
    const gpus = cls === 'frac' ? pick(rng, FRACTIONS) / 1000 : cls;
    const pod: HeteroPod = { id: `h-${i}`, gpus, cpuMilli, memoryMib, submitS: 0, durationS: 0 };
    // Draw every pod's pin and times (used or not) so one choice does not shift the others.
    const u = rng.next();
    const modelPick = rng.next();
    if (gpus > 0 && u < pinned) {
      // a model with a node type that can hold the pod, weighted by its GPUs
      const fits = nodes.filter(
        (n) =>
          n.model !== 'cpu' &&
          n.gpus >= Math.max(1, gpus) &&
          n.cpuMilli >= cpuMilli &&
          n.memoryMib >= memoryMib,
      );
      const byModel = new Map<string, number>();
      for (const n of fits) byModel.set(n.model, (byModel.get(n.model) ?? 0) + n.gpus * n.count);
      const table = [...byModel.entries()];
      const total = table.reduce((s, [, w]) => s + w, 0);
      let x = modelPick * total;
      for (const [m, w] of table) {
        x -= w;
        if (x < 0) {
          pod.model = m;
          break;
        }
      }
    }
    t += -Math.log(1 - rng.next()) * 60; // Poisson arrivals, one a minute on average
    pod.submitS = Math.round(t);
    pod.durationS = Math.round(60 * 2 ** (rng.next() * 10)); // log-uniform, 1 min to ~17 h
    pods.push(pod);
  }
  return { nodes, pods };
}

export interface HeteroFiles {
  trace: string;
  cluster: string;
  queues: string;
  traceMerged: string;
  clusterMerged: string;
  queuesMerged: string;
  nodes: number;
  gpus: number;
  pods: number;
}

export const MERGED_FLAVOR = 'gpu';
const TENANT = 'openb';

function queuesJson(
  capacity: Map<string, { gpu: number; cpu: number; memory: number }>,
  order: string[],
): string {
  const quotas: Record<string, unknown> = {};
  for (const f of order) {
    const c = capacity.get(f);
    if (c) quotas[f] = { gpu: { nominal: c.gpu }, cpu: { nominal: c.cpu }, memory: { nominal: c.memory } };
  }
  return `${JSON.stringify({ queues: [{ name: TENANT, tenant: TENANT, queueingStrategy: 'BestEffortFIFO', quotas }] }, null, 2)}\n`;
}

/**
 * Writes hetero-{trace,cluster}.csv and hetero-queues.json (one flavor per GPU model, plus
 * `cpu` for CPU-only nodes), and the same workload merged into one flavor
 * (hetero-*-merged.*: every node of flavor `gpu`, no pins).
 */
export function writeHetero(o: HeteroOptions & { outDir: string }): HeteroFiles {
  return writeFillInput(generateHetero(o), o.outDir, 'hetero', MODEL_ORDER);
}

/**
 * Writes PREFIX-{trace,cluster}.csv and PREFIX-queues.json (one flavor per model, declared in
 * `order`, models not in it after them by name) and the merged variants PREFIX-*-merged.*.
 */
export function writeFillInput(
  g: HeteroInput,
  outDir: string,
  prefix: string,
  order: readonly string[],
): HeteroFiles {
  mkdirSync(outDir, { recursive: true });
  const header = 'name,pool,gpu_type,gpus,cpu_milli,memory_mib,count';
  const cl = [header];
  const clm = [header];
  const cap = new Map<string, { gpu: number; cpu: number; memory: number }>();
  let gpus = 0;
  let nodes = 0;
  for (const n of g.nodes) {
    cl.push(`${n.name},default,${n.model},${n.gpus},${n.cpuMilli},${n.memoryMib},${n.count}`);
    clm.push(`${n.name},default,${MERGED_FLAVOR},${n.gpus},${n.cpuMilli},${n.memoryMib},${n.count}`);
    for (const k of [n.model, MERGED_FLAVOR]) {
      const c = cap.get(k) ?? { gpu: 0, cpu: 0, memory: 0 };
      c.gpu += n.gpus * n.count;
      c.cpu += n.cpuMilli * n.count;
      c.memory += n.memoryMib * n.count;
      cap.set(k, c);
    }
    gpus += n.gpus * n.count;
    nodes += n.count;
  }
  const th = 'id,submit_time,duration_s,tenant,gpus,pods,cpu_milli,memory_mib,gpu_type';
  const tr = [th];
  const trm = [th];
  for (const p of g.pods) {
    const row = [p.id, p.submitS, p.durationS, TENANT, p.gpus, 1, p.cpuMilli, p.memoryMib];
    tr.push([...row, p.model ?? ''].join(','));
    trm.push([...row, ''].join(','));
  }
  const f = (n: string) => join(outDir, `${prefix}-${n}`);
  const files: HeteroFiles = {
    trace: f('trace.csv'),
    cluster: f('cluster.csv'),
    queues: f('queues.json'),
    traceMerged: f('trace-merged.csv'),
    clusterMerged: f('cluster-merged.csv'),
    queuesMerged: f('queues-merged.json'),
    nodes,
    gpus,
    pods: g.pods.length,
  };
  const models = [...new Set(g.nodes.map((n) => n.model))];
  const declared = [
    ...order.filter((m) => models.includes(m)),
    ...models.filter((m) => !order.includes(m)).sort(),
  ];
  writeFileSync(files.trace, `${tr.join('\n')}\n`);
  writeFileSync(files.cluster, `${cl.join('\n')}\n`);
  writeFileSync(files.queues, queuesJson(cap, declared));
  writeFileSync(files.traceMerged, `${trm.join('\n')}\n`);
  writeFileSync(files.clusterMerged, `${clm.join('\n')}\n`);
  writeFileSync(files.queuesMerged, queuesJson(cap, [MERGED_FLAVOR]));
  return files;
}
