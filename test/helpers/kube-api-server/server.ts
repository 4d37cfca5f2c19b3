/**
 * HTTP routing of the test API server: discovery, list/get/watch, create, replace, the patch
 * formats, delete; bearer-token auth ('test-token'); Status bodies for every error; an outage switch.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { applyPatch, jsonPatch, mergePatch } from './patch.js';
import {
  ApiError,
  apiGroupList,
  apiResourceList,
  groupVersion,
  type ResourceType,
  statusBody,
  typeByPath,
} from './resources.js';
import { fieldMatcher, labelMatcher } from './selectors.js';
import type { Propagation, Store, Writer } from './store.js';
import type { Watches } from './watch.js';

export const TEST_TOKEN = 'test-token';

export type WriteVerb = 'create' | 'patch' | 'apply' | 'update' | 'delete';
export interface WriteRecord {
  verb: WriteVerb;
  kind: string;
  namespace?: string;
  name: string;
  status: number;
  at: number;
}

export interface ServerState {
  store: Store;
  watches: Watches;
  writes: WriteRecord[];
  requests: number;
  down: boolean;
  /** Last object each field manager applied, by `${uid}|${manager}`: what the next apply may remove. */
  applied: Map<string, unknown>;
}

interface Route {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

function send(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'BadRequest', 'the request body is not valid JSON');
  }
}

/** `/api/v1/...` or `/apis/<group>/<version>/...` → the resource it addresses. */
function route(segments: string[]): Route | undefined {
  let gv: string;
  let rest: string[];
  if (segments[0] === 'api' && segments[1] === 'v1') [gv, rest] = ['v1', segments.slice(2)];
  else if (segments[0] === 'apis' && segments.length >= 3)
    [gv, rest] = [`${segments[1]}/${segments[2]}`, segments.slice(3)];
  else return undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const type = typeByPath(gv, rest[2]!);
    if (type?.namespaced) return { type, namespace: rest[1], name: rest[3], subresource: rest[4] };
  }
  const type = rest[0] ? typeByPath(gv, rest[0]) : undefined;
  if (!type) return undefined;
  return { type, name: rest[1], subresource: rest[2] };
}

function listBody(state: ServerState, r: Route, query: URLSearchParams): object {
  const all = state.store.list(
    r.type.kind,
    r.namespace,
    query.get('labelSelector'),
    query.get('fieldSelector'),
  );
  const offset = Number(query.get('continue') || 0);
  const limit = Number(query.get('limit') || 0);
  const page = limit > 0 ? all.slice(offset, offset + limit) : all.slice(offset);
  const more = limit > 0 && offset + limit < all.length;
  // Like a real server, list items carry no apiVersion/kind (the list says what they are).
  const items = page.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
  return {
    kind: `${r.type.kind}List`,
    apiVersion: groupVersion(r.type),
    metadata: {
      resourceVersion: state.store.resourceVersion,
      ...(more ? { continue: String(offset + limit) } : {}),
    },
    items,
  };
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
  // batch/v1 Jobs default to orphaning their pods when deleted through the API, as on a real cluster.
  return r.type.kind === 'Job' ? 'Orphan' : 'Background';
}

async function write(
  state: ServerState,
  req: IncomingMessage,
  r: Route,
  query: URLSearchParams,
  text: string,
): Promise<[WriteVerb, number, unknown]> {
  const { store } = state;
  const writer: Writer = r.subresource === 'status' ? 'status' : 'client';
  if (r.subresource && r.subresource !== 'status')
    throw new ApiError(404, 'NotFound', `subresource ${r.subresource} is not served`);
  if (req.method === 'POST' && !r.name) return ['create', 201, store.create(bodyFor(r, parseJson(text)))];
  if (!r.name) throw new ApiError(405, 'MethodNotAllowed', `${req.method} needs a name`);
  const existing = store.get(r.type.kind, r.namespace, r.name);
  if (req.method === 'PUT') return ['update', 200, store.replace(bodyFor(r, parseJson(text)), writer)];
  if (req.method === 'DELETE') {
    const body = text ? parseJson(text) : undefined;
    const deleted = store.delete(r.type.kind, r.namespace, r.name, propagationOf(r, query, body));
    const details = { name: r.name, kind: r.type.plural, group: r.type.group, uid: deleted.metadata.uid };
    return ['delete', 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }];
  }
  if (req.method !== 'PATCH')
    throw new ApiError(405, 'MethodNotAllowed', `${req.method} is not allowed here`);
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
  if (contentType === 'application/apply-patch+yaml') {
    const manager = query.get('fieldManager');
    if (!manager)
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
    if (!applied.apiVersion || !applied.kind)
      throw new ApiError(400, 'BadRequest', 'apply needs apiVersion and kind');
    let result: any;
    if (!existing) result = store.create(applied, writer === 'status' ? 'system' : 'client');
    else {
      const previous = state.applied.get(`${existing.metadata.uid}|${manager}`);
      const next: any = applyPatch(existing, previous, applied);
      if (!applied.metadata.resourceVersion) delete next.metadata.resourceVersion;
      result = store.replace(next, writer);
    }
    state.applied.set(`${result.metadata.uid}|${manager}`, applied);
    return ['apply', existing ? 200 : 201, result];
  }
  if (!existing)
    throw new ApiError(404, 'NotFound', `${r.type.plural} "${r.name}" not found`, {
      name: r.name,
      kind: r.type.plural,
      group: r.type.group,
    });
  let next: any;
  if (contentType === 'application/json-patch+json') next = jsonPatch(existing, parseJson(text));
  else if (
    contentType === 'application/merge-patch+json' ||
    contentType === 'application/strategic-merge-patch+json'
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
  return ['patch', 200, store.replace(next, writer)];
}

async function handle(state: ServerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  state.requests++;
  if (state.down)
    return send(
      res,
      503,
      statusBody(503, 'ServiceUnavailable', 'the test API server is down (setDown(true))'),
    );
  if (req.headers.authorization !== `Bearer ${TEST_TOKEN}`)
    return send(res, 401, statusBody(401, 'Unauthorized', 'Unauthorized'));
  const url = new URL(req.url ?? '/', 'http://localhost');
  const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const query = url.searchParams;
  const path = segments.join('/');
  if (req.method === 'GET') {
    if (path === 'version')
      return send(res, 200, {
        major: '1',
        minor: '31',
        gitVersion: 'v1.31.0-fairway-test',
        platform: 'linux/amd64',
      });
    if (path === 'api')
      return send(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (path === 'apis') return send(res, 200, apiGroupList());
    const gv =
      path === 'api/v1'
        ? 'v1'
        : segments[0] === 'apis' && segments.length === 3
          ? `${segments[1]}/${segments[2]}`
          : undefined;
    if (gv !== undefined) {
      const list = apiResourceList(gv);
      return list
        ? send(res, 200, list)
        : send(res, 404, statusBody(404, 'NotFound', 'the server could not find the requested resource'));
    }
  }
  const r = route(segments);
  if (!r)
    return send(
      res,
      404,
      statusBody(
        404,
        'NotFound',
        `the server could not find the requested resource (${req.method} ${url.pathname})`,
      ),
    );
  if (req.method === 'GET') {
    const watching = query.get('watch') === 'true' || query.get('watch') === '1';
    if (watching) {
      const byName = r.name ? fieldMatcher(`metadata.name=${r.name}`) : () => true;
      const labels = labelMatcher(query.get('labelSelector'));
      const fields = fieldMatcher(query.get('fieldSelector'));
      const timeout = Number(query.get('timeoutSeconds') || 0);
      return state.watches.start(res, {
        type: r.type,
        ...(r.namespace ? { namespace: r.namespace } : {}),
        matches: (o) => byName(o) && labels(o) && fields(o),
        ...(query.get('resourceVersion') ? { resourceVersion: query.get('resourceVersion')! } : {}),
        ...(timeout > 0 ? { timeoutSeconds: timeout } : {}),
      });
    }
    if (!r.name) return send(res, 200, listBody(state, r, query));
    const obj = state.store.get(r.type.kind, r.namespace, r.name);
    if (!obj)
      throw new ApiError(
        404,
        'NotFound',
        `${r.type.group ? `${r.type.plural}.${r.type.group}` : r.type.plural} "${r.name}" not found`,
        { name: r.name, kind: r.type.plural, group: r.type.group },
      );
    return send(res, 200, obj);
  }
  const text = await readBody(req);
  let name = r.name ?? '';
  if (!name) {
    try {
      name = String(JSON.parse(text)?.metadata?.name ?? '');
    } catch {
      // the write itself answers the unreadable body
    }
  }
  let verb: WriteVerb =
    req.method === 'POST'
      ? 'create'
      : req.method === 'PUT'
        ? 'update'
        : req.method === 'DELETE'
          ? 'delete'
          : 'patch';
  if (req.method === 'PATCH' && (req.headers['content-type'] ?? '').startsWith('application/apply-patch'))
    verb = 'apply';
  const record = (status: number, objectName: string) =>
    state.writes.push({
      verb,
      kind: r.type.kind,
      ...(r.namespace ? { namespace: r.namespace } : {}),
      name: objectName,
      status,
      at: Date.now(),
    });
  try {
    const [doneVerb, code, body] = await write(state, req, r, query, text);
    verb = doneVerb;
    record(code, name || String((body as any)?.metadata?.name ?? ''));
    send(res, code, body);
  } catch (error) {
    record(error instanceof ApiError ? error.code : 500, name);
    throw error;
  }
}

export function createApiHttpServer(state: ServerState): Server {
  return createServer((req, res) => {
    handle(state, req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (error instanceof ApiError) return send(res, error.code, error.status());
      send(
        res,
        500,
        statusBody(500, 'InternalError', error instanceof Error ? error.message : String(error)),
      );
    });
  });
}
