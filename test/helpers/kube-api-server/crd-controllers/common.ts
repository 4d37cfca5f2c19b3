/**
 * What the workload controllers (JobSet, PyTorchJob, RayCluster, RayJob) share: finding what an
 * object owns, metav1.Condition bookkeeping (meta.SetStatusCondition), owner references, creating a
 * child through the store (a refusal is a Warning Event and a `problem`, retried 200 ms later), and
 * writing status through the /status subresource only when it changed.
 */
import { type Cluster, listIn } from '../cluster.js';
import type { EventSource } from '../events.js';
import { kubeTime, terminal } from '../store.js';

/** A refused create is tried again this much later. */
export const RETRY_MS = 200;

export const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The controller owner reference to `owner` (as ctrl.SetControllerReference writes it). */
export function ownerReference(owner: any): any {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The stored objects of `kind` by the uid of their controller of kind `ownerKind` (uncopied). */
export function childrenByOwner(c: Cluster, kind: string, ownerKind: string): Map<string, any[]> {
  const out = new Map<string, any[]>();
  for (const o of c.store.peekAll(kind)) {
    const ref = (o.metadata.ownerReferences ?? []).find((r: any) => r.kind === ownerKind && r.controller);
    if (ref) listIn(out, ref.uid).push(o);
  }
  return out;
}

/** A pod neither finished nor being deleted (k8s FilterActivePods). */
export const activePod = (p: any) => !terminal(p) && !p.metadata.deletionTimestamp;

export const podReady = (p: any) =>
  p.status?.phase === 'Running' &&
  (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');

export interface MetaCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message?: string;
}

/**
 * meta.SetStatusCondition: adds or updates a metav1.Condition (lastTransitionTime only moves when status
 * does). Returns whether anything changed.
 */
export function setStatusCondition(status: any, c: MetaCondition, now = Date.now()): boolean {
  const conditions: any[] = (status.conditions ??= []);
  const existing = conditions.find((x) => x.type === c.type);
  const next = {
    type: c.type,
    status: c.status,
    reason: c.reason,
    message: c.message ?? '',
    lastTransitionTime:
      existing && existing.status === c.status ? existing.lastTransitionTime : kubeTime(now),
    ...(existing?.observedGeneration !== undefined
      ? { observedGeneration: existing.observedGeneration }
      : {}),
  };
  if (existing && same(existing, next)) return false;
  if (existing) conditions[conditions.indexOf(existing)] = next;
  else conditions.push(next);
  return true;
}

export const conditionTrue = (status: any, type: string) =>
  (status?.conditions ?? []).some((c: any) => c.type === type && c.status === 'True');

/** Retries of refused creates, per owner uid. */
export class Retries {
  private readonly at = new Map<string, number>();
  /** The message of the last refused create. */
  lastError = '';

  constructor(private readonly c: Cluster) {}

  /** Whether the owner may try creating now (no refusal pending a retry). */
  ready(uid: string, now: number): boolean {
    const at = this.at.get(uid);
    return at === undefined || this.c.due(at, now);
  }

  /** Creates a child; a refusal is reported (Event `failReason`, a problem) and retried RETRY_MS later. */
  create(
    owner: any,
    obj: any,
    source: EventSource,
    now: number,
    failReason = 'FailedCreate',
  ): any | undefined {
    try {
      const created = this.c.store.create(obj, 'system');
      this.at.delete(owner.metadata.uid);
      return created;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.lastError = message;
      this.c.problem(message);
      this.c.events.record(owner, 'Warning', failReason, `Error creating: ${message}`, source);
      this.at.set(owner.metadata.uid, now + RETRY_MS);
      this.c.due(now + RETRY_MS, now);
      return undefined;
    }
  }

  forget(uid: string): void {
    this.at.delete(uid);
  }
}

/** Writes `status` through the /status subresource when it differs from the stored one. */
export function writeStatus(c: Cluster, obj: any, status: any): any | undefined {
  if (same(status, obj.status ?? {})) return undefined;
  const { resourceVersion: _rv, ...metadata } = obj.metadata;
  return c.write(() => c.store.replace({ ...obj, metadata, status }, 'status'));
}

/** Deletes an object if it is still there (a refusal is a problem). */
export function remove(
  c: Cluster,
  kind: string,
  obj: any,
  propagation: 'Background' | 'Foreground' = 'Background',
): boolean {
  const { namespace, name, uid } = obj.metadata;
  const current = c.store.peek(kind, namespace, name);
  if (!current || current.metadata.uid !== uid || current.metadata.deletionTimestamp) return false;
  return c.write(() => c.store.delete(kind, namespace, name, { propagation })) !== undefined;
}

/** The value of an env variable of a container (a literal value only). */
export const envValue = (container: any, name: string): string | undefined =>
  (container?.env ?? []).find((e: any) => e.name === name)?.value;
