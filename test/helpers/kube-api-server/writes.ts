/**
 * The write verbs of the test API server: create, replace, the patch formats (JSON merge, strategic
 * merge treated as JSON merge, JSON patch, server-side apply with field ownership), delete (with
 * gracePeriodSeconds and propagationPolicy), the pods/eviction and /scale (scale.ts) subresources. Every
 * client write names its field manager (`fieldManager`, else the User-Agent's product, as a real server
 * does).
 */
import type { IncomingMessage } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { serverSideApply } from './apply.js';
import type { FieldValidation } from './crds.js';
import { evictPod } from './disruption.js';
import type { EventRecorder } from './events.js';
import { fromEventsV1, toEventsV1 } from './events.js';
import { jsonPatch, mergePatch } from './patch.js';
import { ApiError, groupVersion, notFound, type ResourceType } from './resources.js';
import { SCALABLE, scaleRequest } from './scale.js';
import type { Propagation, Store, Writer } from './store.js';

export type WriteVerb = 'create' | 'patch' | 'apply' | 'update' | 'delete';

export interface Route {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

/**
 * How a route's objects are served and stored (events.k8s.io/v1 Events are stored as core v1 ones; a custom
 * object is stored in its CRD's storage version and served in the route's: only apiVersion differs).
 */
export function viewOf(r: Route): { kind: string; toView: (o: any) => any; fromView: (o: any) => any } {
  if (r.type.custom) {
    const apiVersion = groupVersion(r.type);
    const toView = (o: any) => (o?.kind === r.type.kind ? { ...o, apiVersion } : o);
    return { kind: r.type.kind, toView, fromView: (o) => o };
  }
  if (r.type.storedAs) return { kind: r.type.storedAs, toView: toEventsV1, fromView: fromEventsV1 };
  return { kind: r.type.kind, toView: (o) => o, fromView: (o) => o };
}

export function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'BadRequest', 'the request body is not valid JSON');
  }
}

/** Fills in the route's kind, apiVersion and namespace; a body that names another one is a 400. */
function bodyFor(r: Route, body: any): any {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ApiError(400, 'BadRequest', 'the request body must be an object');
  const gv = groupVersion(r.type);
  if ((body.kind && body.kind !== r.type.kind) || (body.apiVersion && body.apiVersion !== gv)) {
    throw new ApiError(
      400,
      'BadRequest',
      `the body is a ${body.apiVersion}/${body.kind}, the URL addresses ${gv}/${r.type.kind}`,
    );
  }
  const metadata = body.metadata ?? {};
  if (r.type.namespaced && metadata.namespace && metadata.namespace !== r.namespace) {
    throw new ApiError(
      400,
      'BadRequest',
      'the namespace of the provided object does not match the namespace sent on the request',
    );
  }
  if (r.name && metadata.name && metadata.name !== r.name) {
    throw new ApiError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
  }
  return {
    ...body,
    apiVersion: gv,
    kind: r.type.kind,
    metadata: {
      ...metadata,
      ...(r.name ? { name: r.name } : {}),
      ...(r.type.namespaced ? { namespace: r.namespace } : {}),
    },
  };
}

function propagationOf(r: Route, query: URLSearchParams, body: any): Propagation {
  const asked = query.get('propagationPolicy') ?? body?.propagationPolicy;
  if (asked === 'Orphan' || asked === 'Background' || asked === 'Foreground') return asked;
  if (query.get('orphanDependents') === 'true' || body?.orphanDependents === true) return 'Orphan';
  // batch/v1 Jobs default to orphaning their pods when deleted through the API, as on a real cluster;
  // apps/v1 Deployments and ReplicaSets (like everything else) to background garbage collection.
  return r.type.kind === 'Job' ? 'Orphan' : 'Background';
}

/** The field manager of a write: `fieldManager`, else the User-Agent up to its first `/`. */
function managerOf(req: IncomingMessage, query: URLSearchParams): string {
  const asked = query.get('fieldManager');
  if (asked) return asked.slice(0, 128);
  const agent = String(req.headers['user-agent'] ?? '')
    .split('/')[0]!
    .replace(/[^\x20-\x7e]/g, '');
  return agent.slice(0, 128) || 'unknown';
}

function success(code: number, details?: object): object {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    code,
    ...(details ? { details } : {}),
  };
}

function evict(store: Store, events: EventRecorder, r: Route, text: string): [WriteVerb, number, unknown] {
  const body = parseJson(text);
  if (body?.kind !== 'Eviction' || !String(body?.apiVersion ?? '').startsWith('policy/'))
    throw new ApiError(400, 'BadRequest', 'the body of an eviction must be a policy/v1 Eviction');
  if (body.metadata?.name && body.metadata.name !== r.name)
    throw new ApiError(400, 'BadRequest', 'name in URL does not match name in Eviction object');
  evictPod({ store, events }, r.namespace!, r.name!, body.deleteOptions);
  return ['create', 201, success(201)];
}

function fieldValidationOf(query: URLSearchParams): FieldValidation | undefined {
  const asked = query.get('fieldValidation');
  if (asked === null || asked === '') return undefined;
  if (asked === 'Ignore' || asked === 'Warn' || asked === 'Strict') return asked;
  throw new ApiError(
    400,
    'BadRequest',
    `fieldValidation parameter unsupported: ${asked} (supported values: "Ignore", "Warn", "Strict")`,
  );
}

/** Runs a write; `warnings` receives what the Warning header should say (unknown fields of a custom object). */
export async function write(
  store: Store,
  events: EventRecorder,
  req: IncomingMessage,
  r: Route,
  query: URLSearchParams,
  text: string,
  warnings: string[] = [],
): Promise<[WriteVerb, number, unknown]> {
  const writer: Writer = r.subresource === 'status' ? 'status' : 'client';
  if (r.subresource === 'eviction' && r.type.kind === 'Pod' && req.method === 'POST')
    return evict(store, events, r, text);
  const manager = managerOf(req, query);
  if (r.subresource === 'scale' && SCALABLE.has(r.type.kind) && r.name) {
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
    const scale = scaleRequest(
      store,
      req.method ?? '',
      contentType,
      r.type,
      r.namespace!,
      r.name,
      text,
      manager,
    );
    return [req.method === 'PUT' ? 'update' : 'patch', 200, scale];
  }
  if ((r.subresource && r.subresource !== 'status') || (r.subresource === 'status' && !r.type.hasStatus))
    throw new ApiError(404, 'NotFound', `subresource ${r.subresource} is not served`);
  const { kind, toView, fromView } = viewOf(r);
  const stored = store.type(kind);
  const fieldValidation = fieldValidationOf(query);
  const options = { manager, warnings, ...(fieldValidation ? { fieldValidation } : {}) };
  if (req.method === 'POST' && !r.name)
    return ['create', 201, toView(store.create(fromView(bodyFor(r, parseJson(text))), 'client', options))];
  if (!r.name) throw new ApiError(405, 'MethodNotAllowed', `${req.method} needs a name`);
  const current = store.get(kind, r.namespace, r.name);
  const existing = current && toView(current);
  if (req.method === 'PUT')
    return ['update', 200, toView(store.replace(fromView(bodyFor(r, parseJson(text))), writer, options))];
  if (req.method === 'DELETE') {
    const body = text ? parseJson(text) : undefined;
    const grace = query.get('gracePeriodSeconds') ?? body?.gracePeriodSeconds;
    const uid = body?.preconditions?.uid;
    if (uid && current && current.metadata.uid !== uid)
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`,
      );
    const { object, pending } = store.delete(kind, r.namespace, r.name, {
      propagation: propagationOf(r, query, body),
      ...(grace !== undefined && grace !== null ? { gracePeriodSeconds: Number(grace) } : {}),
    });
    if (pending) return ['delete', 200, toView(object)];
    const details = { name: r.name, kind: r.type.plural, group: r.type.group, uid: object.metadata.uid };
    return ['delete', 200, success(200, details)];
  }
  if (req.method !== 'PATCH')
    throw new ApiError(405, 'MethodNotAllowed', `${req.method} is not allowed here`);
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
  if (contentType === 'application/apply-patch+yaml') {
    if (!query.get('fieldManager'))
      throw new ApiError(
        422,
        'Invalid',
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
      );
    let applied: any;
    try {
      applied = parseYaml(text);
    } catch {
      throw new ApiError(400, 'BadRequest', 'the apply patch is not valid YAML');
    }
    applied = bodyFor(r, applied);
    const force = query.get('force') === 'true';
    const subresource = writer === 'status' ? 'status' : undefined;
    const next = fromView(serverSideApply(r.type, existing, applied, manager, force, subresource));
    const appliedOptions = { ...options, applied: true };
    if (!existing) {
      const created = store.create(next, writer === 'status' ? 'system' : 'client', appliedOptions);
      return ['apply', 201, toView(created)];
    }
    if (!applied.metadata.resourceVersion) delete next.metadata.resourceVersion;
    return ['apply', 200, toView(store.replace(next, writer, appliedOptions))];
  }
  if (!existing) throw notFound(stored, r.name);
  let next: any;
  if (contentType === 'application/json-patch+json') next = jsonPatch(existing, parseJson(text));
  else if (
    contentType === 'application/merge-patch+json' ||
    (contentType === 'application/strategic-merge-patch+json' && !r.type.custom) // not for custom resources
  ) {
    const patch = parseJson(text);
    next = mergePatch(existing, patch);
    if (!patch?.metadata?.resourceVersion) next.metadata.resourceVersion = existing.metadata.resourceVersion;
  } else
    throw new ApiError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
    );
  next.metadata = { ...next.metadata, name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) };
  return ['patch', 200, toView(store.replace(fromView(next), writer, options))];
}
