// The quota tree (queues are leaves, cohorts inner nodes) and its arithmetic, per flavor and
// resource, as in the design doc (after Kueue's resource_node):
//   localQuota = max(0, subtreeQuota − lendingLimit)   (0 when no lendingLimit: all is lendable)
//   cohort subtreeQuota = own nominal + Σ children (subtreeQuota − localQuota)
//   usage beyond a node's free localQuota is charged to its parent, recursively.
// All amounts are internal integers (GPU in milli-units).

export const GPU = 0;
export const CPU = 1;
export const MEM = 2;
export const RESOURCE_COUNT = 3;

export interface FlavorQuota {
  /** Whether the node declares this resource. An undeclared resource of a declared flavor is not
   * quota-limited (only nodes limit it) and its usage is not charged to the parent.
   */
  declared: boolean[];
  nominal: number[];
  borrowingLimit: (number | null)[];
  lendingLimit: (number | null)[];
  subtree: number[];
  local: number[];
  usage: number[];
}

export function emptyFlavorQuota(): FlavorQuota {
  return {
    declared: [false, false, false],
    nominal: [0, 0, 0],
    borrowingLimit: [null, null, null],
    lendingLimit: [null, null, null],
    subtree: [0, 0, 0],
    local: [0, 0, 0],
    usage: [0, 0, 0],
  };
}

export class QuotaNode {
  parent: QuotaNode | null = null;
  readonly children: QuotaNode[] = [];
  /** Per flavor. Cohorts get entries for every flavor a descendant declares. */
  readonly flavors = new Map<string, FlavorQuota>();
  /** The node's own declaration (nominal and limits per flavor); `flavors` is derived from it and the children. */
  own = new Map<string, FlavorQuota>();
  constructor(
    readonly name: string,
    readonly kind: 'queue' | 'cohort',
  ) {}

  root(): QuotaNode {
    let n: QuotaNode = this;
    while (n.parent) n = n.parent;
    return n;
  }
}

export function addUsage(node: QuotaNode, flavor: string, r: number, v: number): void {
  if (v === 0) return;
  const q = node.flavors.get(flavor);
  if (!q) return;
  const usage = q.usage[r] as number;
  q.usage[r] = usage + v;
  if (!q.declared[r] && node.kind === 'queue') return;
  const localAvailable = Math.max(0, (q.local[r] as number) - usage);
  if (v <= localAvailable || !node.parent) return;
  addUsage(node.parent, flavor, r, v - localAvailable);
}

export function removeUsage(node: QuotaNode, flavor: string, r: number, v: number): void {
  if (v === 0) return;
  const q = node.flavors.get(flavor);
  if (!q) return;
  const usage = q.usage[r] as number;
  q.usage[r] = usage - v;
  if (!q.declared[r] && node.kind === 'queue') return;
  const storedInParent = usage - (q.local[r] as number);
  if (storedInParent <= 0 || !node.parent) return;
  removeUsage(node.parent, flavor, r, Math.min(v, storedInParent));
}

/** What `node` could take right now on (flavor, r): its free local quota plus what its ancestors can give within borrowing limits. */
export function available(node: QuotaNode, flavor: string, r: number): number {
  const q = node.flavors.get(flavor);
  const subtree = q ? (q.subtree[r] as number) : 0;
  const usage = q ? (q.usage[r] as number) : 0;
  if (!node.parent) return subtree - usage;
  const local = q ? (q.local[r] as number) : 0;
  const localAvailable = Math.max(0, local - usage);
  let parentAvailable = available(node.parent, flavor, r);
  const bl = q ? q.borrowingLimit[r] : null;
  if (bl !== null && bl !== undefined) {
    const storedInParent = subtree - local;
    const usedInParent = Math.max(0, usage - local);
    parentAvailable = Math.min(parentAvailable, storedInParent - usedInParent + bl);
  }
  return localAvailable + parentAvailable;
}

/** The most `node` could ever take on (flavor, r) if nobody else used anything. */
export function potentialAvailable(node: QuotaNode, flavor: string, r: number): number {
  const q = node.flavors.get(flavor);
  const subtree = q ? (q.subtree[r] as number) : 0;
  if (!node.parent) return subtree;
  const local = q ? (q.local[r] as number) : 0;
  let parentPotential = potentialAvailable(node.parent, flavor, r);
  const bl = q ? q.borrowingLimit[r] : null;
  if (bl !== null && bl !== undefined) parentPotential = Math.min(parentPotential, subtree - local + bl);
  return local + parentPotential;
}

/** Recomputes subtree and local quotas bottom-up and resets usage to 0 (callers re-charge admitted jobs). */
export function recomputeTree(node: QuotaNode): void {
  for (const c of node.children) recomputeTree(c);
  node.flavors.clear();
  for (const [f, q] of node.own) {
    node.flavors.set(f, {
      declared: [...q.declared],
      nominal: [...q.nominal],
      borrowingLimit: [...q.borrowingLimit],
      lendingLimit: [...q.lendingLimit],
      subtree: [...q.nominal],
      local: [0, 0, 0],
      usage: [0, 0, 0],
    });
  }
  for (const c of node.children) {
    for (const [f, cq] of c.flavors) {
      let q = node.flavors.get(f);
      if (!q) {
        q = emptyFlavorQuota();
        node.flavors.set(f, q);
      }
      for (let r = 0; r < RESOURCE_COUNT; r++) {
        if (!cq.declared[r]) continue;
        q.declared[r] = true;
        q.subtree[r] = (q.subtree[r] as number) + (cq.subtree[r] as number) - (cq.local[r] as number);
      }
    }
  }
  for (const q of node.flavors.values()) {
    for (let r = 0; r < RESOURCE_COUNT; r++) {
      const ll = q.lendingLimit[r];
      q.local[r] = ll !== null && ll !== undefined ? Math.max(0, (q.subtree[r] as number) - ll) : 0;
    }
  }
}
