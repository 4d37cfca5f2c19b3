// Kubernetes Nodes → the scheduler's node model: which flavor a node feeds (the first matching
// mapping of the settings), its physical GPUs, cpu and memory, pool, and whether anything new may
// be placed on it. Nodes no mapping matches (CPU-only nodes among them) are left out, with why.
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import type { BackendNode } from '../port.js';
import { TAINT_DEDICATED } from './naming.js';
import { cpuMillicores, memoryMiB, resourceCount } from './quantity.js';
import type { FlavorMapping, KubernetesSettings } from './settings.js';

/**
 * The port's node, read from a Node: gpus = floor(allocatable[mapping.resource] / unitsPerGpu);
 * cpu and memory from allocatable; unschedulable = spec.unschedulable, or Ready not True, or a
 * NoSchedule/NoExecute taint other than nvidia.com/gpu and fairway.dev/dedicated;
 * dedicatedTenant = the value of a fairway.dev/dedicated taint.
 */
export interface InventoryNode extends BackendNode {
  gpuProduct: string | null;
}

export const DEFAULT_POOL = 'default';

/** Taints Fairway's own pods tolerate where needed: they do not make a node unschedulable. */
const TOLERATED_TAINTS = new Set(['nvidia.com/gpu', TAINT_DEDICATED]);

export function inventoryOf(
  nodes: readonly V1Node[],
  s: KubernetesSettings,
): { nodes: InventoryNode[]; ignored: { name: string; why: string }[] } {
  const result: InventoryNode[] = [];
  const ignored: { name: string; why: string }[] = [];
  for (const node of nodes) {
    const name = node.metadata?.name;
    if (!name) continue;
    try {
      const entry = inventoryNode(node, name, s);
      if (typeof entry === 'string') ignored.push({ name, why: entry });
      else result.push(entry);
    } catch (err) {
      ignored.push({ name, why: `unreadable capacity: ${(err as Error).message}` });
    }
  }
  return { nodes: result, ignored };
}

/** The node's inventory entry, or why it has none. */
function inventoryNode(node: V1Node, name: string, s: KubernetesSettings): InventoryNode | string {
  const labels = node.metadata?.labels ?? {};
  const pool = labels[s.poolLabel] || DEFAULT_POOL;
  const gpuProduct = labels[s.gpuProductLabel] || null;
  const allocatable = node.status?.allocatable ?? {};
  const capacity = node.status?.capacity ?? {};
  const mapping = s.flavors.find((m) => matches(m, allocatable, capacity, pool, gpuProduct));
  if (!mapping) return noMappingWhy(allocatable, capacity, s, pool, gpuProduct);

  const units =
    allocatable[mapping.resource] !== undefined ? resourceCount(allocatable[mapping.resource] as string) : 0;
  const taints = node.spec?.taints ?? [];
  const dedicated = taints.find((t) => t.key === TAINT_DEDICATED && t.effect !== 'PreferNoSchedule');
  return {
    name,
    pool,
    flavor: mapping.flavor,
    gpus: Math.floor(units / (mapping.unitsPerGpu ?? 1)),
    cpu: allocatable.cpu !== undefined ? cpuMillicores(allocatable.cpu) : 0,
    memory: allocatable.memory !== undefined ? memoryMiB(allocatable.memory) : 0,
    unschedulable: Boolean(node.spec?.unschedulable) || !isReady(node) || taints.some(blocksScheduling),
    dedicatedTenant: dedicated?.value || null,
    gpuProduct,
  };
}

/** A mapping matches a node that exposes its resource (even at 0 while the device plugin restarts) and fits
 * its product and pool filters.
 */
function matches(
  m: FlavorMapping,
  allocatable: Record<string, string>,
  capacity: Record<string, string>,
  pool: string,
  gpuProduct: string | null,
): boolean {
  if (allocatable[m.resource] === undefined && capacity[m.resource] === undefined) return false;
  if (m.gpuProduct !== undefined && m.gpuProduct !== gpuProduct) return false;
  if (m.pool !== undefined && m.pool !== pool) return false;
  return true;
}

function noMappingWhy(
  allocatable: Record<string, string>,
  capacity: Record<string, string>,
  s: KubernetesSettings,
  pool: string,
  gpuProduct: string | null,
): string {
  const mapped = new Set(s.flavors.map((m) => m.resource));
  const exposed = [...new Set([...Object.keys(allocatable), ...Object.keys(capacity)])]
    .filter((r) => mapped.has(r) || /^nvidia\.com\//.test(r))
    .sort();
  if (exposed.length === 0)
    return 'no GPU resource any flavor mapping names (a CPU-only node?): Fairway places only GPU-flavored work, so it is not in the inventory';
  const found = exposed.map((r) => `${r}=${allocatable[r] ?? capacity[r]}`).join(', ');
  return `no flavor mapping matches ${found} with GPU product ${gpuProduct ?? '(none)'} in pool ${pool}`;
}

function isReady(node: V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

function blocksScheduling(t: V1Taint): boolean {
  return (t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !TOLERATED_TAINTS.has(t.key);
}
