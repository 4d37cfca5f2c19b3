import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type Client, createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { IdentityResolver } from '../../src/auth/identity.js';
import { OidcVerifier } from '../../src/auth/oidc.js';
import {
  type AttachedWebSocket,
  type AttachWebSocketOptions,
  attachWebSocket,
  DEFAULT_WEBSOCKET_CONFIG,
  type WebSocketConfig,
} from '../../src/server/websocket/websocket.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { eventually } from '../helpers/live-subscription.js';

/**
 * WebSocket abuse, over real sockets: each test attaches the transport with small caps
 * to an HTTP server of its own in front of the test app's yoga (same plugins, database and event
 * bus; mutations go to the app's HTTP port and their events reach these subscribers).
 */
let t: TestApp;
let aurora: string;
let borealis: string;
const serverErrors: unknown[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  t = await startTestApp();
  aurora = (await t.idsOf('aurora-research')).Tenant!;
  borealis = (await t.idsOf('borealis-inference')).Tenant!;
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  await t?.close();
  expect(serverErrors.map(String)).toEqual([]);
});

interface Limited {
  url: string;
  ws: AttachedWebSocket;
  close(): Promise<void>;
}

async function limited(
  caps: Partial<WebSocketConfig>,
  operationCheck?: AttachWebSocketOptions['operationCheck'],
): Promise<Limited> {
  const httpServer: Server = createServer(t.app.yoga);
  const identity = new IdentityResolver({
    orm: t.app.orm,
    oidc: new OidcVerifier(t.app.config.auth.oidc!),
    now: () => t.now.value,
  });
  const ws = attachWebSocket({
    httpServer,
    yoga: t.app.yoga,
    identity,
    config: { ...DEFAULT_WEBSOCKET_CONFIG, ...caps },
    metrics: t.app.metrics,
    logError: (e) => serverErrors.push(e),
    operationCheck,
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const url = `ws://127.0.0.1:${(httpServer.address() as AddressInfo).port}/graphql`;
  return {
    url,
    ws,
    async close() {
      await ws.close();
      httpServer.closeAllConnections();
      await new Promise((resolve) => httpServer.close(resolve));
    },
  };
}

const AUDIT = `subscription($id: ID!) { auditEventRecorded(tenantId: $id) { id action targetId } }`;
type GqlError = { message: string; extensions?: { code?: string; limit?: string } };

interface Sub {
  events: Record<string, any>[];
  errors: GqlError[];
  ended: boolean;
  dispose: () => void;
  /** Resolves once `count` events or any error arrived (bounded). */
  until(check: (s: Sub) => boolean, ms?: number): Promise<void>;
}

function client(url: string, token: string | null): Client {
  const c = createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams: token ? { authorization: `Bearer ${token}` } : undefined,
    lazy: true,
    retryAttempts: 0,
  });
  clients.push(c);
  return c;
}

function subscribe(c: Client, tenantId: string, query = AUDIT): Sub {
  let changed = () => {};
  const sub: Sub = {
    events: [],
    errors: [],
    ended: false,
    dispose: () => {},
    until: (check, ms = 5000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `not reached in ${ms} ms: ${sub.events.length} events, errors ${JSON.stringify(sub.errors)}`,
              ),
            ),
          ms,
        );
        changed = () => check(sub) && (clearTimeout(timer), resolve());
        changed();
      }),
  };
  sub.dispose = c.subscribe<Record<string, any>>(
    { query, variables: { id: tenantId } },
    {
      next: (m) => (
        m.errors && sub.errors.push(...(m.errors as GqlError[])),
        m.data?.auditEventRecorded && sub.events.push(m.data.auditEventRecorded),
        changed()
      ),
      error: (e) => (
        sub.errors.push(
          ...(Array.isArray(e)
            ? (e as GqlError[])
            : [{ message: String((e as { code?: number }).code ?? e) }]),
        ),
        (sub.ended = true),
        changed()
      ),
      complete: () => ((sub.ended = true), changed()),
    },
  );
  return sub;
}

async function createProject(
  tenant: 'aurora-research' | 'borealis-inference',
  description?: string,
): Promise<string> {
  const tenantId = tenant === 'aurora-research' ? aurora : borealis;
  const slug = `wsl-${Math.random().toString(36).slice(2, 10)}`;
  const res = await t.gql(
    t.token(tenant, 'TENANT_ADMIN'),
    `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
    { in: { tenantId, slug, name: slug, description } },
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.createProject.id as string;
}

/** graphql-ws says nothing when a subscription starts: mutate until every one of `subs` has heard an event. */
async function untilLive(subs: Sub[], tenant: 'aurora-research' | 'borealis-inference'): Promise<void> {
  for (let i = 0; i < 40 && subs.some((s) => s.events.length === 0); i++) {
    await createProject(tenant);
    await Promise.all(subs.map((s) => s.until((x) => x.events.length > 0, 150).catch(() => undefined)));
  }
  for (const s of subs) expect(s.errors).toEqual([]);
  for (const s of subs) expect(s.events.length).toBeGreaterThan(0);
}

const codesOf = (sub: Sub) => sub.errors.map((e) => e.extensions?.code);

describe('subscription caps (per replica): refused per operation with RATE_LIMITED, the socket stays open', () => {
  it('per connection: the 4th subscription on a socket is refused; the other three and the socket keep delivering', async () => {
    const server = await limited({ maxSubscriptionsPerConnection: 3 });
    try {
      const c = client(server.url, t.token('aurora-research', 'AUDITOR'));
      const kept = [subscribe(c, aurora), subscribe(c, aurora), subscribe(c, aurora)];
      await untilLive(kept, 'aurora-research');
      const refused = subscribe(c, aurora);
      await refused.until((s) => s.ended);
      expect(refused.errors).toEqual([
        {
          message:
            'Too many subscriptions: at most 3 open per connection on this server; complete one first.',
          extensions: { code: 'RATE_LIMITED', limit: 'subscriptions per connection' },
        },
      ]);
      const before = kept.map((s) => s.events.length);
      const project = await createProject('aurora-research');
      for (const [i, s] of kept.entries())
        await s.until((x) => x.events.length > before[i]! && x.events.some((e) => e.targetId === project));
      // One completed: its slot is free again on the same socket.
      kept[0]!.dispose();
      await eventually(async () => server.ws.stats().subscriptions === 2);
      const again = subscribe(c, aurora);
      await untilLive([again], 'aurora-research');
    } finally {
      await server.close();
    }
  });

  it("per tenant: aurora's subscriptions past its cap are refused across its principals; borealis is unaffected", async () => {
    const server = await limited({ maxSubscriptionsPerTenant: 4, maxSubscriptionsPerPrincipal: 3 });
    try {
      const otto = client(server.url, t.token('aurora-research', 'AUDITOR'));
      const ada = client(server.url, t.token('aurora-research', 'TENANT_ADMIN'));
      const bea = client(server.url, t.token('borealis-inference', 'TENANT_ADMIN'));
      const ottos = [subscribe(otto, aurora), subscribe(otto, aurora), subscribe(otto, aurora)];
      await untilLive(ottos, 'aurora-research');
      const overPrincipal = subscribe(otto, aurora);
      await overPrincipal.until((s) => s.ended);
      expect(overPrincipal.errors.map((e) => e.message)).toEqual([
        'Too many subscriptions: at most 3 open per principal on this server; complete one first.',
      ]);
      const adas = [subscribe(ada, aurora)];
      await untilLive(adas, 'aurora-research');
      const overTenant = subscribe(ada, aurora);
      await overTenant.until((s) => s.ended);
      expect(codesOf(overTenant)).toEqual(['RATE_LIMITED']);
      // It names the cap and its value, nothing of any other tenant.
      expect(overTenant.errors[0]!.message).toBe(
        'Too many subscriptions: at most 4 open per tenant on this server; complete one first.',
      );
      const beas = [subscribe(bea, borealis), subscribe(bea, borealis), subscribe(bea, borealis)];
      await untilLive(beas, 'borealis-inference');
      expect(server.ws.stats()).toMatchObject({ subscriptions: 7, connections: 3 });
    } finally {
      await server.close();
    }
  });
});

describe('a malformed operation is answered on its own id', () => {
  it('a syntax error and a too-deep subscription get GRAPHQL_PARSE_FAILED / BAD_USER_INPUT; the socket and its live subscription carry on, nothing logged', async () => {
    const c = client(t.url.replace('http', 'ws'), t.token('aurora-research', 'AUDITOR'));
    const live = subscribe(c, aurora);
    await untilLive([live], 'aurora-research');
    const syntax = subscribe(c, aurora, 'subscription { auditEventRecorded(tenantId: ');
    const deep = `subscription($id: ID!) { queueUpdated(id: $id) { ${'tenant { queues { '.repeat(10)}id${' } }'.repeat(10)} } }`;
    const tooDeep = subscribe(c, aurora, deep);
    await syntax.until((s) => s.ended);
    await tooDeep.until((s) => s.ended);
    expect(codesOf(syntax)).toEqual(['GRAPHQL_PARSE_FAILED']);
    expect(syntax.errors[0]!.message).toMatch(/^Syntax Error/);
    expect(codesOf(tooDeep)).toEqual(['BAD_USER_INPUT']);
    expect(tooDeep.errors[0]!.message).toMatch(/depth limit/);
    const unknownField = subscribe(c, aurora, 'subscription { nope }');
    await unknownField.until((s) => s.ended);
    expect(codesOf(unknownField)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    const before = live.events.length;
    const project = await createProject('aurora-research');
    await live.until((s) => s.events.length > before);
    expect(live.events.at(-1)!.targetId).toBe(project);
    expect(live.ended).toBe(false);
  });
});

describe('persisted operations over WebSocket (the operation check)', () => {
  it("a refused operation is answered on its id with the check's code; a persisted id becomes its text", async () => {
    const byId = new Map([['audit', AUDIT]]);
    const server = await limited({}, (p) =>
      p.query
        ? { error: 'Send a persisted operation id.', code: 'PERSISTED_QUERY_REQUIRED' }
        : byId.has(String((p.extensions?.persistedQuery as { sha256Hash?: string })?.sha256Hash))
          ? { query: byId.get('audit')! }
          : { error: 'Unknown persisted operation.', code: 'PERSISTED_QUERY_NOT_FOUND' },
    );
    try {
      const c = client(server.url, t.token('aurora-research', 'AUDITOR'));
      const text = subscribe(c, aurora);
      await text.until((s) => s.ended);
      expect(text.errors).toEqual([
        { message: 'Send a persisted operation id.', extensions: { code: 'PERSISTED_QUERY_REQUIRED' } },
      ]);
      // By hash: the known one runs (an event arrives), an unknown one is refused on its id.
      const viaHash = (hash: string) => {
        const got: { data: unknown[]; errors: GqlError[] } = { data: [], errors: [] };
        const done = new Promise<void>((resolve) =>
          c.subscribe(
            {
              query: '',
              variables: { id: aurora },
              extensions: { persistedQuery: { version: 1, sha256Hash: hash } },
            },
            {
              next: (m) => (m.data && got.data.push(m.data), resolve()),
              error: (e) => (Array.isArray(e) && got.errors.push(...(e as GqlError[])), resolve()),
              complete: () => resolve(),
            },
          ),
        );
        return { got, done };
      };
      const unknown = viaHash('nope');
      await unknown.done;
      expect(unknown.got.errors.map((e) => e.extensions?.code)).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
      const known = viaHash('audit');
      for (let i = 0; i < 40 && known.got.data.length === 0; i++) {
        await createProject('aurora-research');
        await Promise.race([known.done, new Promise((r) => setTimeout(r, 150))]);
      }
      expect(known.got).toMatchObject({
        errors: [],
        data: [{ auditEventRecorded: { action: 'project.create' } }],
      });
    } finally {
      await server.close();
    }
  });
});

describe('counting is exact on every exit path', () => {
  it('completed, refused, failed, closed sockets and a closing server all give their slots back (and the open-subscriptions gauge follows)', async () => {
    const gauge = async () => (await t.app.metrics.subscriptionsOpen.get()).values[0]?.value ?? 0;
    const baseline = await gauge();
    const server = await limited({ maxSubscriptionsPerConnection: 10 });
    const tokens = [t.token('aurora-research', 'AUDITOR'), t.token('borealis-inference', 'TENANT_ADMIN')];
    const conns = Array.from({ length: 12 }, (_, i) => client(server.url, tokens[i % 2]!));
    const subs = conns.map((c, i) =>
      Array.from({ length: 10 }, () => subscribe(c, i % 2 ? borealis : aurora)),
    );
    // Counted when each operation is accepted (no event needed): wait for all 120 to be open.
    const settled = async (open: number) => {
      await eventually(
        async () => server.ws.stats().subscriptions === open && (await gauge()) === baseline + open,
        10_000,
      ).catch(() => undefined);
      expect({ stats: server.ws.stats().subscriptions, gauge: (await gauge()) - baseline }).toEqual({
        stats: open,
        gauge: open,
      });
    };
    await settled(120);
    expect(server.ws.stats()).toMatchObject({
      connections: 12,
      byPrincipal: { connections: 12, subscriptions: 120 },
      byTenant: { connections: 12, subscriptions: 120 },
    });

    // Completed by the client: 3 on every socket.
    for (const list of subs) for (const s of list.slice(0, 3)) s.dispose();
    await settled(84);
    // conns[0] holds 7: three more fit, the next is refused over the cap; a parse error and a
    // FORBIDDEN answer (a member may not read the audit log) keep nothing either.
    const fits = Array.from({ length: 3 }, () => subscribe(conns[0]!, aurora));
    await settled(87);
    const member = client(server.url, t.token('aurora-research', 'MEMBER'));
    const ended = [
      subscribe(conns[0]!, aurora),
      subscribe(conns[1]!, borealis, 'subscription {'),
      subscribe(member, aurora),
    ];
    for (const s of ended) await s.until((x) => x.ended);
    expect(ended.map(codesOf)).toEqual([['RATE_LIMITED'], ['GRAPHQL_PARSE_FAILED'], ['FORBIDDEN']]);
    expect(fits.some((s) => s.ended)).toBe(false);
    await settled(87);
    // Sockets closed by their clients.
    await Promise.all(conns.slice(0, 6).map((c) => c.dispose()));
    await settled(42);
    // (The member's lazy client closed its socket once its only operation ended.)
    expect(server.ws.stats()).toMatchObject({ connections: 6, halfOpen: 0 });
    // The server closes with subscriptions still open.
    await server.close();
    expect(server.ws.stats()).toEqual({
      sockets: 0,
      halfOpen: 0,
      connections: 0,
      subscriptions: 0,
      byPrincipal: { connections: 0, subscriptions: 0 },
      byTenant: { connections: 0, subscriptions: 0 },
      slowReadersClosed: 0,
    });
    await eventually(async () => (await gauge()) === baseline, 5000);
  });
});

interface RawOutcome {
  code: number;
  reason: string;
  acked: boolean;
  socket: WebSocket;
}

/** A bare graphql-transport-ws socket: sends connection_init; resolves once acknowledged (left open) or
 * closed.
 */
function rawInit(url: string, payload?: Record<string, unknown>): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url, 'graphql-transport-ws');
    const outcome: RawOutcome = { code: 0, reason: '', acked: false, socket };
    socket.on('open', () =>
      socket.send(JSON.stringify({ type: 'connection_init', ...(payload ? { payload } : {}) })),
    );
    socket.on('message', (data) => {
      if (JSON.parse(String(data)).type === 'connection_ack')
        resolve(Object.assign(outcome, { acked: true }));
    });
    socket.on('error', () => undefined);
    socket.on('close', (code, reason) => resolve(Object.assign(outcome, { code, reason: String(reason) })));
  });
}

/**
 * The cheapest client that still speaks the protocol: one write carries the upgrade request and a
 * connection_init frame; resolves with the server's close code (or 0 if acknowledged), then hangs up.
 * (A ws client costs twice as much per socket here, and the 5,000 have to fit the test's time.)
 */
function bareInit(url: string, sendInit = true): Promise<number> {
  const { hostname, port, pathname } = new URL(url);
  const init = Buffer.from(JSON.stringify({ type: 'connection_init' }));
  const request = Buffer.concat([
    Buffer.from(
      `GET ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n`,
    ),
    ...(sendInit ? [Buffer.from([0x81, 0x80 | init.length, 0, 0, 0, 0]), init] : []), // a masked text frame (zero mask)
  ]);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(request));
    let received = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const headerEnd = received.indexOf('\r\n\r\n');
      const frame = headerEnd < 0 ? null : received.subarray(headerEnd + 4);
      if (!frame || frame.length < 4) return;
      resolve(frame[0] === 0x88 ? frame.readUInt16BE(2) : 0);
      socket.destroy();
    });
    socket.on('error', () => resolve(-1));
    socket.on('close', () => resolve(-1));
  });
}

const gc = (() => {
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

describe('5,000 sockets opened quickly', () => {
  it('without a credential: every one is closed at connection_init (4403) or before (4429, half-open cap), none acknowledged; nothing is held afterwards', async () => {
    const server = await limited({ maxHalfOpenPerIp: 50 });
    try {
      gc();
      const heapBefore = process.memoryUsage().heapUsed;
      let peakSockets = 0;
      const sampler = setInterval(() => (peakSockets = Math.max(peakSockets, server.ws.stats().sockets)), 2);
      const codes: number[] = [];
      for (let batch = 0; batch < 20; batch++)
        codes.push(...(await Promise.all(Array.from({ length: 250 }, () => bareInit(server.url)))));
      clearInterval(sampler);
      const byCode = new Map<number, number>();
      for (const code of codes) byCode.set(code, (byCode.get(code) ?? 0) + 1);
      // Never acknowledged (0), never left open: refused at connection_init, or before it past the half-open
      // cap.
      expect(codes).toHaveLength(5000);
      expect(byCode.get(4403)).toBeGreaterThan(0);
      expect([...byCode.keys()].filter((code) => code !== 4403 && code !== 4429)).toEqual([]);
      await eventually(async () => server.ws.stats().sockets === 0);
      expect(server.ws.stats()).toMatchObject({ sockets: 0, halfOpen: 0, connections: 0 });
      gc();
      const grownMiB = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
      console.log(
        `5,000 anonymous sockets: ${JSON.stringify(Object.fromEntries(byCode))}; peak open on the server ${peakSockets}; heap after - before: ${grownMiB.toFixed(1)} MiB`,
      );
      expect(grownMiB).toBeLessThan(16);
    } finally {
      await server.close();
    }
  });

  it('sockets that never send connection_init: past 50 from one address are closed 4429 at once, the others 4408 at the init timeout', async () => {
    const server = await limited({ maxHalfOpenPerIp: 50, connectionInitTimeoutMs: 300 });
    try {
      const codes = await Promise.all(Array.from({ length: 80 }, () => bareInit(server.url, false)));
      expect(codes.filter((c) => c === 4429)).toHaveLength(30);
      expect(codes.filter((c) => c === 4408)).toHaveLength(50);
      await eventually(async () => server.ws.stats().sockets === 0);
      expect(server.ws.stats().halfOpen).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('authenticated, beyond the per-principal and per-tenant connection caps: closed 4429 naming the cap; another tenant still connects', async () => {
    const server = await limited({
      maxConnectionsPerPrincipal: 12,
      maxConnectionsPerTenant: 20,
      maxHalfOpenPerIp: 5_000,
    });
    const tokens = [t.token('aurora-research', 'AUDITOR'), t.token('aurora-research', 'TENANT_ADMIN')];
    try {
      const outcomes: RawOutcome[] = [];
      // Each is a credential lookup in the database: 150 (the anonymous test above does the 5,000).
      // The auditor first (12 admitted, then the principal cap), then the admin (8 more, then the tenant
      // cap).
      for (let batch = 0; batch < 3; batch++) {
        outcomes.push(
          ...(await Promise.all(
            Array.from({ length: 50 }, () =>
              rawInit(server.url, { authorization: `Bearer ${tokens[batch < 1 ? 0 : 1]}` }),
            ),
          )),
        );
      }
      expect(outcomes.filter((o) => o.acked)).toHaveLength(20);
      const refused = outcomes.filter((o) => !o.acked);
      expect(refused.every((o) => o.code === 4429)).toBe(true);
      expect(new Set(refused.map((o) => o.reason))).toEqual(
        new Set([
          'Too many connections: at most 12 per principal on this server',
          'Too many connections: at most 20 per tenant on this server',
        ]),
      );
      const other = await rawInit(server.url, {
        authorization: `Bearer ${t.token('borealis-inference', 'MEMBER')}`,
      });
      expect(other.acked).toBe(true);
      expect(server.ws.stats()).toMatchObject({ connections: 21, byTenant: { connections: 21 } });
      for (const o of [...outcomes, other]) o.socket.close();
      await eventually(async () => server.ws.stats().sockets === 0);
    } finally {
      await server.close();
    }
  });
});

describe('a subscriber that stops reading', () => {
  it('is closed 1013 once more than maxBufferedBytes wait for it; a subscriber on the same server keeps receiving promptly', async () => {
    const server = await limited({ maxBufferedBytes: 256 * 1024 });
    try {
      const normal = subscribe(client(server.url, t.token('aurora-research', 'AUDITOR')), aurora);
      await untilLive([normal], 'aurora-research');
      const slow = await rawInit(server.url, {
        authorization: `Bearer ${t.token('aurora-research', 'TENANT_ADMIN')}`,
      });
      expect(slow.acked).toBe(true);
      let received = 0;
      slow.socket.on('message', () => received++);
      const closed = new Promise<{ code: number; reason: string }>((resolve) =>
        slow.socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
      );
      // 20 subscriptions, each event 25 copies of the input: ~20 × 25 × 2 KB per mutation.
      const fat = `subscription($id: ID!) { auditEventRecorded(tenantId: $id) { ${Array.from({ length: 25 }, (_, i) => `i${i}: input`).join(' ')} } }`;
      for (let i = 0; i < 20; i++)
        slow.socket.send(
          JSON.stringify({
            id: `s${i}`,
            type: 'subscribe',
            payload: { query: fat, variables: { id: aurora } },
          }),
        );
      const description = 'x'.repeat(2_000);
      for (let i = 0; i < 30 && received < 20; i++) {
        await createProject('aurora-research', description);
        await eventually(async () => received >= 20 * (i + 1) || received >= 20, 200).catch(() => undefined);
      }
      // It read a burst of 20 fat events (~1 MB, four times the cap) without being closed: reading keeps it
      // open.
      expect(received).toBeGreaterThanOrEqual(20);
      expect(server.ws.stats().slowReadersClosed).toBe(0);
      (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();

      const latencies: number[] = [];
      for (let i = 0; i < 200 && server.ws.stats().slowReadersClosed === 0; i++) {
        const before = normal.events.length;
        const started = performance.now();
        const project = await createProject('aurora-research', description);
        await normal.until(
          (s) => s.events.length > before && s.events.some((e) => e.targetId === project),
          2000,
        );
        latencies.push(performance.now() - started);
      }
      expect(server.ws.stats().slowReadersClosed).toBe(1);
      // Reading again, the client finds the close frame behind what it had not read.
      (slow.socket as unknown as { _socket: { resume(): void } })._socket.resume();
      expect(await closed).toEqual({
        code: 1013,
        reason: 'Slow reader: more than 262144 bytes waiting to be sent',
      });
      await eventually(
        async () => server.ws.stats().connections === 1 && server.ws.stats().subscriptions === 1,
      );
      const before = normal.events.length;
      await createProject('aurora-research');
      await normal.until((s) => s.events.length > before);
      console.log(
        `slow reader closed after ${latencies.length} mutations; normal subscriber's mutation→event ms: ${latencies.map((l) => l.toFixed(0)).join(' ')}`,
      );
      expect(Math.max(...latencies)).toBeLessThan(2000);
    } finally {
      await server.close();
    }
  });
});
