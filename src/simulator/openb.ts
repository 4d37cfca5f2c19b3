// Converter for the Alibaba GPU production trace's CSV layout (cluster-trace-gpu-v2023, "openb":
// a node list `sn,cpu_milli,memory_mib,gpu,model` and a pod list `name,cpu_milli,memory_mib,
// num_gpu,gpu_milli,gpu_spec,...`) into the same fill inputs as generate-hetero writes.
import { readFileSync } from 'node:fs';
import { Columns, CsvError, parseCsvTable } from './csv.js';
import {
  type HeteroFiles,
  type HeteroInput,
  type HeteroPod,
  type NodeType,
  writeFillInput,
} from './hetero-gen.js';

export interface OpenbOptions {
  nodeList: string;
  podList: string;
  outDir: string;
  /** Output file prefix (default `openb`). */
  prefix?: string;
}

export interface OpenbResult extends HeteroFiles {
  /** Pods whose gpu_spec named several models: written without a pin (the trace pins one flavor). */
  multiModelPins: number;
}

const absent = (v: string | undefined): boolean => v === undefined || v === '' || v.toLowerCase() === 'nan';

/**
 * Nodes: one per row, `model` the flavor (empty or nan: CPU-only nodes, flavor `cpu`). Pods: one
 * job each, GPUs per pod = gpu_milli / 1000 when num_gpu is 1 (a share below 1000), else num_gpu;
 * gpu_spec naming one model pins it, several models (`A|B`) are written unpinned and counted.
 * Flavors are declared by GPU count, largest first, `cpu` last.
 */
export function convertOpenb(o: OpenbOptions): OpenbResult {
  const nt = parseCsvTable(readFileSync(o.nodeList, 'utf8'), o.nodeList);
  const nc = new Columns(nt.header, o.nodeList, 1, ['sn', 'cpu_milli', 'memory_mib', 'gpu']);
  const nodes: (NodeType & { name: string })[] = [];
  const names = new Set<string>();
  for (const r of nt.rows) {
    const name = nc.required(r, 'sn');
    if (names.has(name)) throw new CsvError(o.nodeList, r.line, `duplicate node '${name}'`);
    names.add(name);
    const gpus = nc.number(r, 'gpu', { min: 0, integer: true });
    const m = nc.get(r, 'model');
    const model = gpus === 0 || absent(m) ? 'cpu' : (m as string);
    if (gpus > 0 && absent(m)) throw new CsvError(o.nodeList, r.line, `node '${name}' has GPUs but no model`);
    nodes.push({
      name,
      model,
      gpus,
      cpuMilli: nc.number(r, 'cpu_milli', { min: 0 }),
      memoryMib: nc.number(r, 'memory_mib', { min: 0 }),
      count: 1,
    });
  }
  const models = new Set(nodes.map((n) => n.model));
  const pt = parseCsvTable(readFileSync(o.podList, 'utf8'), o.podList);
  const pc = new Columns(pt.header, o.podList, 1, ['name', 'cpu_milli', 'memory_mib', 'num_gpu']);
  const pods: HeteroPod[] = [];
  let multi = 0;
  for (const r of pt.rows) {
    const num = pc.number(r, 'num_gpu', { min: 0, integer: true });
    const milli = pc.get(r, 'gpu_milli') === undefined ? 1000 : pc.number(r, 'gpu_milli', { min: 0 });
    if (milli > 1000) throw new CsvError(o.podList, r.line, `gpu_milli ${milli} is above 1000`);
    const gpus = num === 1 && milli > 0 && milli < 1000 ? Math.round(milli) / 1000 : num;
    const creation = pc.get(r, 'creation_time');
    const deletion = pc.get(r, 'deletion_time');
    const submitS = absent(creation) ? 0 : Number(creation);
    const pod: HeteroPod = {
      id: pc.required(r, 'name'),
      gpus,
      cpuMilli: pc.number(r, 'cpu_milli', { min: 0 }),
      memoryMib: pc.number(r, 'memory_mib', { min: 0 }),
      submitS,
      durationS: absent(deletion) ? 0 : Math.max(0, Number(deletion) - submitS),
    };
    if (gpus === 0 && pod.cpuMilli === 0 && pod.memoryMib === 0) pod.cpuMilli = 1; // the simulator needs some request
    const spec = pc.get(r, 'gpu_spec');
    if (gpus > 0 && !absent(spec)) {
      const ms = (spec as string).split('|').filter((x) => x !== '');
      for (const m of ms)
        if (!models.has(m))
          throw new CsvError(o.podList, r.line, `gpu_spec '${spec}' names a model no node has`);
      if (ms.length === 1) pod.model = ms[0];
      else multi++;
    }
    pods.push(pod);
  }
  const gpuOf = new Map<string, number>();
  for (const n of nodes) gpuOf.set(n.model, (gpuOf.get(n.model) ?? 0) + n.gpus);
  const order = [...gpuOf.keys()]
    .filter((m) => m !== 'cpu')
    .sort((a, b) => (gpuOf.get(b) as number) - (gpuOf.get(a) as number) || (a < b ? -1 : 1));
  order.push('cpu');
  const input: HeteroInput = { nodes, pods };
  return { ...writeFillInput(input, o.outDir, o.prefix ?? 'openb', order), multiModelPins: multi };
}
