// What of a tenant's objects someone else changed: the live objects Fairway manages, read with
// one list per kind, and whether a live object still holds every field Fairway applies. Only
// Fairway's own fields count: server-side apply keeps the fields other managers own (an extra
// label, a quota entry of their own), so those are no drift and are left alone.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import { parseQuantity } from './quantity.js';

/** The kinds of tenant objects, each listed once across the cluster by the managed-by label. */
const TENANT_KINDS = [
  { apiVersion: 'v1', kind: 'Namespace' },
  { apiVersion: 'v1', kind: 'ResourceQuota' },
  { apiVersion: 'v1', kind: 'LimitRange' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
] as const;

/** Namespace, kind and name: the key of an object in Fairway's caches. */
export function objectKey(object: {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
}): string {
  return `${object.metadata?.namespace ?? ''}/${object.kind}/${object.metadata?.name}`;
}

/**
 * Every tenant object carrying the selector's labels, by objectKey. An object whose managed-by
 * label was removed is not among them, so it counts as missing and its labels are applied again.
 */
export async function liveTenantObjects(
  client: KubeClient,
  labelSelector: string,
): Promise<Map<string, KubernetesObject>> {
  const lists = await Promise.all(
    TENANT_KINDS.map(async ({ apiVersion, kind }) =>
      (await client.list<KubernetesObject>(apiVersion, kind, labelSelector)).map((o) => ({
        ...o,
        apiVersion,
        kind,
      })),
    ),
  );
  return new Map(lists.flat().map((o) => [objectKey(o), o]));
}

/**
 * True when `live` has every field `desired` sets, with the same value. Both are in
 * @kubernetes/client-node's in-memory form (as KubeClient.list returns them). Maps may hold more
 * than desired (defaults a server fills in, another manager's fields); lists must have the same
 * length (Fairway's lists are atomic: an apply replaces them whole), each element covering Fairway's;
 * quantities compare by value ('1000m' is '1', as a server may write it).
 */
export function covers(live: unknown, desired: unknown): boolean {
  if (desired === undefined) return true;
  if (Array.isArray(desired))
    return (
      Array.isArray(live) && live.length === desired.length && desired.every((d, i) => covers(live[i], d))
    );
  if (typeof desired === 'object' && desired !== null) {
    if (typeof live !== 'object' || live === null || Array.isArray(live)) return false;
    const record = live as Record<string, unknown>;
    return Object.entries(desired).every(([k, v]) => covers(record[k], v));
  }
  if (live === desired) return true;
  return typeof live === 'string' && typeof desired === 'string' && sameQuantity(live, desired);
}

function sameQuantity(a: string, b: string): boolean {
  try {
    return parseQuantity(a) === parseQuantity(b);
  } catch {
    return false;
  }
}
