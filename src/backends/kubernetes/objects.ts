// Pure object builders of the Kubernetes backend (tenant objects, the best-effort PriorityClass,
// Jobs), and `toWireJson`, the JSON a Kubernetes API server receives for one of them.

import type { KubernetesObject } from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { getSerializationType } from '@kubernetes/client-node/dist/util.js';

export * from './job-objects.js';
export * from './tenant-objects.js';

/**
 * The wire JSON of a built object, exactly as @kubernetes/client-node serializes it for a request
 * (`_default` → `default`, `_from` → `from`, Dates → strings, unknown fields dropped). For tests
 * that validate with kubernetes-models and for anything that sends objects without client-node.
 * (client-node 1.4.0 does not export its serializer from the package root; the path is pinned with the
 * version.)
 */
export function toWireJson(obj: KubernetesObject): Record<string, unknown> {
  const type = getSerializationType(obj.apiVersion, obj.kind);
  return JSON.parse(JSON.stringify(ObjectSerializer.serialize(obj, type))) as Record<string, unknown>;
}
