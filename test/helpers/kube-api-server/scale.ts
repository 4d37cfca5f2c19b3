/**
 * The /scale subresource of Deployments and ReplicaSets (an autoscaling/v1 Scale: spec.replicas, and
 * status.replicas / status.selector as a label selector string), as GET, PUT and PATCH serve it and the
 * HorizontalPodAutoscaler controller writes it: only spec.replicas of the object changes (its field
 * manager's entry says subresource `scale`); a resourceVersion in the Scale is a precondition.
 */
import { decodeCheck } from './apps.js';
import { jsonPatch, mergePatch } from './patch.js';
import { ApiError, invalid, notFound, type ResourceType, typeByKind } from './resources.js';
import type { Store } from './store.js';

export const SCALABLE = new Set(['Deployment', 'ReplicaSet']);

/** metav1.LabelSelectorAsSelector(…).String(): `a=b,c in (x,y),!d`, requirements sorted by key. */
export function selectorString(sel: any): string {
  const terms: [string, string][] = [];
  for (const [k, v] of Object.entries<string>(sel?.matchLabels ?? {})) terms.push([k, `${k}=${v}`]);
  for (const e of sel?.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',');
    const term =
      e.operator === 'In'
        ? `${e.key} in (${values})`
        : e.operator === 'NotIn'
          ? `${e.key} notin (${values})`
          : e.operator === 'Exists'
            ? e.key
            : `!${e.key}`;
    terms.push([e.key, term]);
  }
  return terms
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, t]) => t)
    .join(',');
}

/** The Scale of a stored Deployment or ReplicaSet. */
export function scaleOf(obj: any): any {
  const { name, namespace, uid, resourceVersion, creationTimestamp } = obj.metadata;
  const replicas = obj.spec?.replicas ?? 0;
  const selector = selectorString(obj.spec?.selector);
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name, namespace, uid, resourceVersion, creationTimestamp },
    spec: replicas ? { replicas } : {},
    status: { replicas: obj.status?.replicas ?? 0, ...(selector ? { selector } : {}) },
  };
}

const SCALE_TYPE: ResourceType = {
  kind: 'Scale',
  group: 'autoscaling',
  version: 'v1',
  plural: 'scale',
  singular: 'scale',
  namespaced: true,
  hasStatus: false,
};

/**
 * Sets spec.replicas through the scale subresource: `expectedRv` (the Scale's resourceVersion) must be
 * current. Returns the stored object.
 */
export function setReplicas(
  store: Store,
  kind: string,
  namespace: string,
  name: string,
  replicas: unknown,
  manager: string,
  expectedRv?: string,
): any {
  const t = typeByKind(kind)!;
  const current = store.get(kind, namespace, name);
  if (!current) throw notFound(t, name);
  decodeCheck({ kind: 'Scale', spec: { replicas } });
  if (typeof replicas === 'number' && replicas < 0)
    throw invalid(SCALE_TYPE, name, [
      `spec.replicas: Invalid value: ${replicas}: must be greater than or equal to 0`,
    ]);
  const next = { ...current, spec: { ...current.spec, replicas: replicas ?? 0 } };
  if (expectedRv) next.metadata = { ...next.metadata, resourceVersion: expectedRv };
  return store.replace(next, 'client', { manager, subresource: 'scale' });
}

/** GET / PUT / PATCH of `<deployments|replicasets>/<name>/scale`. */
export function scaleRequest(
  store: Store,
  method: string,
  contentType: string,
  type: ResourceType,
  namespace: string,
  name: string,
  text: string,
  manager: string,
): any {
  const current = store.get(type.kind, namespace, name);
  if (!current) throw notFound(type, name);
  if (method === 'GET') return scaleOf(current);
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    throw new ApiError(400, 'BadRequest', 'the request body is not valid JSON');
  }
  if (method === 'PATCH') {
    const view = scaleOf(current);
    if (contentType === 'application/json-patch+json') body = jsonPatch(view, body);
    else if (
      contentType === 'application/merge-patch+json' ||
      contentType === 'application/strategic-merge-patch+json'
    ) {
      body = mergePatch(view, body);
      if (!JSON.parse(text)?.metadata?.resourceVersion) delete body.metadata.resourceVersion;
    } else
      throw new ApiError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json`,
      );
  } else if (method !== 'PUT')
    throw new ApiError(405, 'MethodNotAllowed', `${method} is not allowed on scale`);
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ApiError(400, 'BadRequest', 'the request body must be an object');
  if ((body.kind && body.kind !== 'Scale') || (body.apiVersion && body.apiVersion !== 'autoscaling/v1'))
    throw new ApiError(
      400,
      'BadRequest',
      `the body is a ${body.apiVersion}/${body.kind}, not an autoscaling/v1 Scale`,
    );
  if (body.metadata?.name && body.metadata.name !== name)
    throw new ApiError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
  const stored = setReplicas(
    store,
    type.kind,
    namespace,
    name,
    body.spec?.replicas,
    manager,
    body.metadata?.resourceVersion,
  );
  return scaleOf(stored);
}
