/**
 * HTTP routing of the test API server: discovery, list/get/watch (with bookmarks), the writes
 * (writes.ts); bearer-token auth ('test-token'); Status bodies for every error; an outage switch.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { EventRecorder } from './events.js';
import type { PodLogs } from './pod-logs.js';
import {
  ApiError,
  apiGroup,
  apiGroupList,
  apiResourceList,
  groupVersion,
  notFound,
  statusBody,
} from './resources.js';
import { SCALABLE, scaleRequest } from './scale.js';
import { fieldMatcher, labelMatcher } from './selectors.js';
import type { Store } from './store.js';
import type { Watches } from './watch.js';
import { type Route, viewOf, type WriteVerb, write } from './writes.js';

export const TEST_TOKEN = 'test-token';

export type { WriteVerb } from './writes.js';
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
  events: EventRecorder;
  logs: PodLogs;
  /** How often a watch with allowWatchBookmarks=true gets a BOOKMARK. */
  bookmarkIntervalMs: number;
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

/** `/api/v1/...` or `/apis/<group>/<version>/...` → the resource it addresses (custom ones included). */
function route(store: Store, segments: string[]): Route | undefined {
  const typeByPath = (gv: string, plural: string) => store.typeByPath(gv, plural);
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
  const { kind, toView } = viewOf(r);
  const all = state.store.list(kind, r.namespace, query.get('labelSelector'), query.get('fieldSelector'));
  const offset = Number(query.get('continue') || 0);
  const limit = Number(query.get('limit') || 0);
  const page = limit > 0 ? all.slice(offset, offset + limit) : all.slice(offset);
  const more = limit > 0 && offset + limit < all.length;
  // Like a real server, list items carry no apiVersion/kind (the list says what they are).
  const items = page.map((o) => {
    const { apiVersion: _a, kind: _k, ...rest } = toView(o);
    return rest;
  });
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
    const custom = state.store.crds.all();
    if (path === 'apis') return send(res, 200, apiGroupList(custom));
    if (segments[0] === 'apis' && segments.length === 2) {
      const group = apiGroup(segments[1]!, custom);
      return group
        ? send(res, 200, group)
        : send(res, 404, statusBody(404, 'NotFound', 'the server could not find the requested resource'));
    }
    const gv =
      path === 'api/v1'
        ? 'v1'
        : segments[0] === 'apis' && segments.length === 3
          ? `${segments[1]}/${segments[2]}`
          : undefined;
    if (gv !== undefined) {
      const list = apiResourceList(gv, custom);
      return list
        ? send(res, 200, list)
        : send(res, 404, statusBody(404, 'NotFound', 'the server could not find the requested resource'));
    }
  }
  const r = route(state.store, segments);
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
        ...(query.get('allowWatchBookmarks') === 'true'
          ? { bookmarkIntervalMs: state.bookmarkIntervalMs }
          : {}),
        ...(r.type.storedAs || r.type.custom ? { convert: viewOf(r).toView } : {}),
      });
    }
    if (!r.name) return send(res, 200, listBody(state, r, query));
    if (r.type.kind === 'Pod' && r.subresource === 'log')
      return state.logs.serve(res, r.namespace ?? '', r.name, query);
    if (r.subresource === 'scale' && SCALABLE.has(r.type.kind))
      return send(res, 200, scaleRequest(state.store, 'GET', '', r.type, r.namespace ?? '', r.name, '', ''));
    const { kind, toView } = viewOf(r);
    const obj = state.store.get(kind, r.namespace, r.name);
    if (!obj) throw notFound(state.store.type(kind), r.name);
    return send(res, 200, toView(obj));
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
    const warnings: string[] = [];
    const [doneVerb, code, body] = await write(state.store, state.events, req, r, query, text, warnings);
    verb = doneVerb;
    record(code, name || String((body as any)?.metadata?.name ?? ''));
    if (warnings.length)
      res.setHeader(
        'Warning',
        warnings.map((w) => `299 - ${JSON.stringify(w)}`),
      );
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
