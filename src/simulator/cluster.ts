import { readFileSync } from 'node:fs';
import type { FlavorSpec, NodeSpec } from '../core/scheduling/index.js';
import { Columns, CsvError, parseCsvTable } from './csv.js';

export type FlavorKind = FlavorSpec['kind'];
/** The cluster file holds exactly what the core takes. */
export type SimFlavor = FlavorSpec;
export type SimNode = NodeSpec;

export interface SimCluster {
  flavors: SimFlavor[];
  nodes: SimNode[];
}

/**
 * Cluster CSV, one row per node (or per group of identical nodes with `count`):
 *   name,pool,gpu_type,gpus,cpu_milli,memory_mib[,count][,kind][,slices_per_gpu][,dedicated_tenant][,price_per_gpu_hour]
 * `gpu_type` names the flavor. With count > 1 the nodes are named name-0 … name-(count-1).
 */
export function parseCluster(text: string, file = '<cluster>'): SimCluster {
  const table = parseCsvTable(text, file);
  const cols = new Columns(table.header, file, 1, ['name', 'gpu_type', 'gpus', 'cpu_milli', 'memory_mib']);
  const flavors = new Map<string, SimFlavor>();
  const nodes: SimNode[] = [];
  const names = new Set<string>();
  for (const rec of table.rows) {
    const err = (m: string): never => {
      throw new CsvError(file, rec.line, m);
    };
    const name = cols.required(rec, 'name');
    const pool = cols.get(rec, 'pool') ?? 'default';
    const gpuType = cols.required(rec, 'gpu_type');
    const gpus = cols.number(rec, 'gpus', { min: 0, integer: true });
    const cpu = cols.number(rec, 'cpu_milli', { min: 0 });
    const memory = cols.number(rec, 'memory_mib', { min: 0 });
    const count = cols.number(rec, 'count', { min: 1, integer: true, dflt: 1 });
    const kindRaw = cols.get(rec, 'kind') ?? 'gpu';
    if (kindRaw !== 'gpu' && kindRaw !== 'mig' && kindRaw !== 'timeslice') {
      err(`kind '${kindRaw}' must be gpu, mig or timeslice`);
    }
    const kind = kindRaw as FlavorKind;
    const slicesRaw = cols.get(rec, 'slices_per_gpu');
    let slices: number | undefined;
    if (slicesRaw !== undefined) slices = cols.number(rec, 'slices_per_gpu', { min: 1, integer: true });
    if (kind !== 'gpu' && slices === undefined) err(`kind '${kind}' needs slices_per_gpu`);
    const priceRaw = cols.get(rec, 'price_per_gpu_hour');
    const price = priceRaw === undefined ? undefined : cols.number(rec, 'price_per_gpu_hour', { min: 0 });
    const prev = flavors.get(gpuType);
    if (prev) {
      if (prev.kind !== kind || prev.slicesPerGpu !== slices) {
        err(`gpu_type '${gpuType}' is declared with a different kind/slices_per_gpu than on an earlier row`);
      }
    } else {
      const f: SimFlavor = { name: gpuType, kind, gpuModel: gpuType };
      if (slices !== undefined) f.slicesPerGpu = slices;
      if (price !== undefined) f.pricePerUnitHour = price;
      flavors.set(gpuType, f);
    }
    const dedicated = cols.get(rec, 'dedicated_tenant');
    for (let i = 0; i < count; i++) {
      const nodeName = count > 1 ? `${name}-${i}` : name;
      if (names.has(nodeName)) err(`duplicate node name '${nodeName}'`);
      names.add(nodeName);
      const n: SimNode = { name: nodeName, pool, flavor: gpuType, gpus, cpu, memory };
      if (dedicated !== undefined) n.dedicatedTenant = dedicated;
      nodes.push(n);
    }
  }
  if (nodes.length === 0) throw new CsvError(file, 2, 'the cluster has no nodes');
  return { flavors: [...flavors.values()], nodes };
}

export function readCluster(path: string): SimCluster {
  return parseCluster(readFileSync(path, 'utf8'), path);
}

/** Schedulable GPU units per flavor (slices for mig/timeslice flavors). */
export function flavorCapacity(c: SimCluster): Map<string, { gpu: number; cpu: number; memory: number }> {
  const m = new Map<string, { gpu: number; cpu: number; memory: number }>();
  const byName = new Map(c.flavors.map((f) => [f.name, f]));
  for (const n of c.nodes) {
    const f = byName.get(n.flavor);
    const units = n.gpus * (f && f.kind !== 'gpu' ? (f.slicesPerGpu ?? 1) : 1);
    const cur = m.get(n.flavor) ?? { gpu: 0, cpu: 0, memory: 0 };
    cur.gpu += units;
    cur.cpu += n.cpu;
    cur.memory += n.memory;
    m.set(n.flavor, cur);
  }
  return m;
}

export function totalGpus(c: SimCluster): number {
  let s = 0;
  for (const n of c.nodes) s += n.gpus;
  return s;
}
