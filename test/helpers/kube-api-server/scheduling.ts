/**
 * What the test cluster's scheduler checks before binding a pod to a node, with the reasons a
 * real kube-scheduler gives (`0/3 nodes are available: 1 Insufficient nvidia.com/gpu, …`).
 */

const SUFFIXES: Record<string, number> = {
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A Kubernetes quantity ('500m', '16Gi', '1e3', 4) as a number of base units (cores, bytes, devices). */
export function parseQuantity(q: string | number | undefined): number {
  if (q === undefined) return 0;
  if (typeof q === 'number') return q;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(q.trim());
  const factor = m ? SUFFIXES[m[2]!] : undefined;
  if (!m || factor === undefined) throw new Error(`not a quantity: ${q}`);
  return Number(m[1]) * factor;
}

/** A pod's requests per resource: each container's request, or its limit when it has no request (as the API
 * server defaults it).
 */
export function podRequests(pod: any): Map<string, number> {
  const total = new Map<string, number>();
  for (const c of pod.spec?.containers ?? []) {
    const resources = c.resources ?? {};
    const names = new Set([...Object.keys(resources.requests ?? {}), ...Object.keys(resources.limits ?? {})]);
    for (const name of names) {
      const amount = parseQuantity(resources.requests?.[name] ?? resources.limits?.[name]);
      total.set(name, (total.get(name) ?? 0) + amount);
    }
  }
  return total;
}

function labelsOf(node: any): Record<string, string> {
  return { 'kubernetes.io/hostname': node.metadata.name, ...(node.metadata.labels ?? {}) };
}

function matchesExpression(labels: Record<string, string>, e: any): boolean {
  const value = labels[e.key];
  const has = value !== undefined;
  switch (e.operator) {
    case 'In':
      return has && (e.values ?? []).includes(value);
    case 'NotIn':
      return !has || !(e.values ?? []).includes(value);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'Gt':
      return has && Number(value) > Number(e.values?.[0]);
    case 'Lt':
      return has && Number(value) < Number(e.values?.[0]);
    default:
      return false;
  }
}

function matchesPlacement(pod: any, node: any): boolean {
  const labels = labelsOf(node);
  for (const [k, v] of Object.entries<string>(pod.spec?.nodeSelector ?? {}))
    if (labels[k] !== v) return false;
  const terms: any[] | undefined =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  return terms.some(
    (t) =>
      (t.matchExpressions ?? []).every((e: any) => matchesExpression(labels, e)) &&
      (t.matchFields ?? []).every((e: any) => matchesExpression({ 'metadata.name': node.metadata.name }, e)),
  );
}

function tolerates(toleration: any, taint: any): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.operator === 'Exists') return !toleration.key || toleration.key === taint.key;
  return toleration.key === taint.key && (toleration.value ?? '') === (taint.value ?? '');
}

function untoleratedTaint(pod: any, node: any): any | undefined {
  const taints: any[] = [...(node.spec?.taints ?? [])];
  const ready = (node.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
  if (ready && ready.status !== 'True')
    taints.push({ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' });
  const tolerations: any[] = pod.spec?.tolerations ?? [];
  return taints.find(
    (t) =>
      (t.effect === 'NoSchedule' || t.effect === 'NoExecute') &&
      !tolerations.some((tol) => tolerates(tol, t)),
  );
}

/**
 * Why `pod` cannot go on `node` (in the scheduler's words), or undefined when it fits.
 * `podsOnNode`: the non-terminal pods already bound there, whose requests use the node's allocatable.
 */
export function unfitReason(pod: any, node: any, podsOnNode: any[]): string | undefined {
  // In the order of kube-scheduler's filter plugins: NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit.
  const cordon = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };
  if (node.spec?.unschedulable && !(pod.spec?.tolerations ?? []).some((t: any) => tolerates(t, cordon)))
    return 'node(s) were unschedulable';
  const taint = untoleratedTaint(pod, node);
  if (taint) return `node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`;
  if (!matchesPlacement(pod, node)) return "node(s) didn't match Pod's node affinity/selector";
  const allocatable: Record<string, string> = node.status?.allocatable ?? node.status?.capacity ?? {};
  const used = new Map<string, number>();
  for (const other of podsOnNode)
    for (const [r, n] of podRequests(other)) used.set(r, (used.get(r) ?? 0) + n);
  for (const [resource, amount] of podRequests(pod)) {
    if (amount <= 0) continue;
    const free = parseQuantity(allocatable[resource]) - (used.get(resource) ?? 0);
    if (amount > free + 1e-9) return `Insufficient ${resource}`;
  }
  return undefined;
}

/** The Unschedulable message for a pod no node takes. */
export function unschedulableMessage(reasons: Map<string, number>, nodeCount: number): string {
  const parts = [...reasons].sort(([a], [b]) => a.localeCompare(b)).map(([why, n]) => `${n} ${why}`);
  return `0/${nodeCount} nodes are available${parts.length ? `: ${parts.join(', ')}` : ''}.`;
}

/**
 * ResourceQuota admission: why a new pod with these requests would exceed a quota of its namespace,
 * or undefined. Counts `requests.<resource>` / `<resource>` / `limits.<resource>` (as requests) and `pods`.
 */
export function quotaExceeded(pod: any, quotas: any[], podsInNamespace: any[]): string | undefined {
  const used = new Map<string, number>();
  for (const other of podsInNamespace)
    for (const [r, n] of podRequests(other)) used.set(r, (used.get(r) ?? 0) + n);
  const asking = podRequests(pod);
  for (const quota of quotas) {
    for (const [key, hardText] of Object.entries<string>(quota.spec?.hard ?? {})) {
      const hard = parseQuantity(hardText);
      if (key === 'pods') {
        if (podsInNamespace.length + 1 > hard)
          return `exceeded quota: ${quota.metadata.name}, requested: pods=1, used: pods=${podsInNamespace.length}, limited: pods=${hardText}`;
        continue;
      }
      const resource = key.replace(/^(requests|limits)\./, '');
      const want = asking.get(resource) ?? 0;
      if (want > 0 && (used.get(resource) ?? 0) + want > hard + 1e-9) {
        return `exceeded quota: ${quota.metadata.name}, requested: ${key}=${want}, used: ${key}=${used.get(resource) ?? 0}, limited: ${key}=${hardText}`;
      }
    }
  }
  return undefined;
}

/** kube-scheduler's non-zero defaults for scoring a container that requests no cpu / memory. */
const NON_ZERO: Record<string, number> = { cpu: 0.1, memory: 200 * 2 ** 20 };

function scoringRequest(pod: any, resource: string): number {
  let total = 0;
  for (const c of pod.spec?.containers ?? []) {
    const r = c.resources ?? {};
    const amount = r.requests?.[resource] ?? r.limits?.[resource];
    total += amount === undefined ? NON_ZERO[resource]! : parseQuantity(amount);
  }
  return total;
}

/**
 * NodeResourcesFit's score (0–100) of `node` for `pod` over cpu and memory (weight 1 each):
 * LeastAllocated (the default) favours free capacity, so pods spread; MostAllocated packs them.
 */
export function nodeScore(
  pod: any,
  node: any,
  podsOnNode: any[],
  strategy: 'least-allocated' | 'most-allocated',
): number {
  const allocatable: Record<string, string> = node.status?.allocatable ?? node.status?.capacity ?? {};
  let sum = 0;
  let weights = 0;
  for (const resource of ['cpu', 'memory']) {
    const capacity = parseQuantity(allocatable[resource]);
    if (capacity <= 0) continue;
    const requested = [...podsOnNode, pod].reduce((s, p) => s + scoringRequest(p, resource), 0);
    const used = Math.min(requested, capacity);
    sum += strategy === 'least-allocated' ? ((capacity - used) * 100) / capacity : (used * 100) / capacity;
    weights++;
  }
  return weights ? sum / weights : 0;
}

export const priorityOf = (pod: any): number => pod.spec?.priority ?? 0;

/**
 * DefaultPreemption's choice for a pod that fits no node: the node where evicting the fewest, least
 * important lower-priority pods makes it fit (victims with the lowest highest priority, then the fewest),
 * or undefined. `podsByNode`: the non-terminal pods bound to each node.
 */
export function preemptionCandidate(
  pod: any,
  nodes: any[],
  podsByNode: Map<string, any[]>,
): { node: any; victims: any[] } | undefined {
  if (pod.spec?.preemptionPolicy === 'Never') return undefined;
  const mine = priorityOf(pod);
  const candidates: { node: any; victims: any[] }[] = [];
  for (const node of nodes) {
    const on = podsByNode.get(node.metadata.name) ?? [];
    const lower = on.filter((p) => priorityOf(p) < mine && !p.metadata.deletionTimestamp);
    const kept = on.filter((p) => !lower.includes(p));
    if (lower.length === 0 || unfitReason(pod, node, kept)) continue;
    // Reprieve the most important victims that can stay.
    const victims: any[] = [];
    for (const p of [...lower].sort((a, b) => priorityOf(b) - priorityOf(a))) {
      if (unfitReason(pod, node, [...kept, p])) victims.push(p);
      else kept.push(p);
    }
    candidates.push({ node, victims });
  }
  const worst = (c: { victims: any[] }) => Math.max(...c.victims.map(priorityOf));
  return candidates.sort(
    (a, b) =>
      worst(a) - worst(b) ||
      a.victims.length - b.victims.length ||
      String(a.node.metadata.name).localeCompare(b.node.metadata.name),
  )[0];
}
