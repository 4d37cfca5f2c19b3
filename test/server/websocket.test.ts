import { type Client, createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_WEBSOCKET_CONFIG, load } from '../../src/config/index.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

/**
 * Subscriptions over graphql-ws on the same port as HTTP, authenticated by the
 * `authorization` connection param, and tenant-isolated event delivery.
 */
let t: TestApp;
type Ids = { Tenant: string } & Record<string, string>;
let aurora: Ids;
let borealis: Ids;
const clients: Client[] = [];

beforeAll(async () => {
  t = await startTestApp();
  aurora = (await t.idsOf('aurora-research')) as typeof aurora;
  borealis = (await t.idsOf('borealis-inference')) as typeof borealis;
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  await t?.close();
});

const SUBSCRIPTION = `subscription($id: ID!) { auditEventRecorded(tenantId: $id) { id action outcome actorName targetId requestId } }`;

interface GqlError {
  message: string;
  extensions?: { code?: string };
}

interface Subscription {
  events: Record<string, any>[];
  errors: GqlError[];
  /** Set when the socket closed with a close event (code, reason). */
  closed: { code: number; reason: string } | null;
  /** Resolves when the subscription completes or errors (never for a healthy one). */
  ended: Promise<void>;
  /** Resolves with the next event after `count` events have arrived, or rejects after `ms`. */
  waitForEvents(count: number, ms?: number): Promise<Record<string, any>[]>;
}

function connect(
  bearer: string | null,
  params?: Record<string, unknown>,
): { client: Client; closes: { code: number; reason: string }[] } {
  const closes: { code: number; reason: string }[] = [];
  const client = createClient({
    url: t.url.replace('http', 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: params ?? (bearer ? { authorization: `Bearer ${bearer}` } : undefined),
    retryAttempts: 0,
    lazy: true,
    on: {
      closed: (event) => {
        const e = event as { code?: number; reason?: string } | undefined;
        if (e && typeof e.code === 'number') closes.push({ code: e.code, reason: String(e.reason ?? '') });
      },
    },
  });
  clients.push(client);
  return { client, closes };
}

function subscribe(
  client: Client,
  closes: { code: number; reason: string }[],
  tenantId: string,
): Subscription {
  const sub: Subscription = {
    events: [],
    errors: [],
    closed: null,
    ended: Promise.resolve(),
    waitForEvents: async () => [],
  };
  const waiters: (() => void)[] = [];
  const notify = () => waiters.splice(0).forEach((w) => w());
  sub.ended = new Promise<void>((resolve) => {
    client.subscribe<Record<string, any>>(
      { query: SUBSCRIPTION, variables: { id: tenantId } },
      {
        next: (value) => {
          if (value.errors) sub.errors.push(...(value.errors as GqlError[]));
          if (value.data?.auditEventRecorded) sub.events.push(value.data.auditEventRecorded);
          notify();
        },
        error: (error) => {
          if (Array.isArray(error)) sub.errors.push(...(error as GqlError[]));
          else if (error && typeof (error as { code?: unknown }).code === 'number') {
            const e = error as { code: number; reason?: string };
            sub.closed = { code: e.code, reason: String(e.reason ?? '') };
          } else sub.errors.push({ message: String((error as Error)?.message ?? error) });
          notify();
          resolve();
        },
        complete: () => {
          if (!sub.closed && closes.length) sub.closed = closes.at(-1)!;
          notify();
          resolve();
        },
      },
    );
  });
  sub.waitForEvents = (count, ms = 5000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `timed out waiting for ${count} event(s); got ${sub.events.length}, errors ${JSON.stringify(sub.errors)}`,
            ),
          ),
        ms,
      );
      const check = () => {
        if (sub.events.length >= count) {
          clearTimeout(timer);
          resolve(sub.events.slice());
        } else waiters.push(check);
      };
      check();
    });
  return sub;
}

/** Waits for a subscription that is expected to end (refused); bounded. */
async function ended(sub: Subscription, ms = 5000): Promise<void> {
  await Promise.race([
    sub.ended,
    new Promise<void>((_, reject) =>
      setTimeout(() => reject(new Error('subscription was not refused in time')), ms),
    ),
  ]);
}

let projectSeq = 0;
async function createProject(
  tenantSlug: 'aurora-research' | 'borealis-inference',
  requestId?: string,
): Promise<string> {
  const ids = tenantSlug === 'aurora-research' ? aurora : borealis;
  const slug = `ws-${tenantSlug.split('-')[0]}-${++projectSeq}`;
  const res = await t.gql(
    t.token(tenantSlug, 'TENANT_ADMIN'),
    `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
    { in: { tenantId: ids.Tenant, slug, name: slug } },
    requestId ? { 'x-request-id': requestId } : {},
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.createProject.id as string;
}

/**
 * graphql-ws sends nothing when a subscription becomes active, so prove it is live by
 * making audited changes until the first event arrives (bounded). Returns the ids made.
 */
async function untilLive(
  sub: Subscription,
  tenantSlug: 'aurora-research' | 'borealis-inference',
): Promise<string[]> {
  const made: string[] = [];
  const before = sub.events.length;
  for (let attempt = 0; attempt < 25 && sub.events.length === before; attempt++) {
    made.push(await createProject(tenantSlug));
    await sub.waitForEvents(before + 1, 200).catch(() => undefined);
  }
  expect(sub.errors).toEqual([]);
  expect(sub.events.length).toBeGreaterThan(before);
  return made;
}

describe('auditEventRecorded over graphql-ws', () => {
  it('an aurora auditor receives the audit event of an admin mutation made over HTTP', async () => {
    const { client, closes } = connect(t.token('aurora-research', 'AUDITOR'));
    const sub = subscribe(client, closes, aurora.Tenant);
    const warmUp = await untilLive(sub, 'aurora-research');
    const first = sub.events[0]!;
    expect(first).toMatchObject({ action: 'project.create', outcome: 'SUCCESS', actorName: 'Ada Admin' });
    expect(warmUp).toContain(first.targetId);

    // Now that the subscription is certainly live: one more mutation, one more matching event.
    const received = sub.events.length;
    const projectId = await createProject('aurora-research', 'req-ws-1');
    const events = await sub.waitForEvents(received + 1);
    const last = events.find((e) => e.targetId === projectId);
    expect(last).toMatchObject({
      action: 'project.create',
      outcome: 'SUCCESS',
      actorName: 'Ada Admin',
      requestId: 'req-ws-1',
    });
    expect(sub.errors).toEqual([]);
  });

  it('a refused attempt is streamed too, as the audit log holds it (outcome FAILED, the error code)', async () => {
    const { client, closes } = connect(t.token('aurora-research', 'AUDITOR'));
    const sub = subscribe(client, closes, aurora.Tenant);
    await untilLive(sub, 'aurora-research');
    const received = sub.events.length;
    // The same slug twice: the second is refused with CONFLICT and audited as FAILED.
    const slug = `ws-dup-${++projectSeq}`;
    const create = () =>
      t.gql(
        t.token('aurora-research', 'TENANT_ADMIN'),
        `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
        { in: { tenantId: aurora.Tenant, slug, name: slug } },
        { 'x-request-id': `req-${slug}` },
      );
    expect((await create()).body.errors).toBeUndefined();
    const refused = await create();
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    const events = await sub.waitForEvents(received + 2);
    expect(events.filter((e) => e.requestId === `req-${slug}`).map((e) => e.outcome)).toEqual([
      'SUCCESS',
      'FAILED',
    ]);
    expect(sub.errors).toEqual([]);
  });

  it("a borealis admin subscribing to aurora's tenant gets NOT_FOUND, like for a tenant that does not exist", async () => {
    const { client, closes } = connect(t.token('borealis-inference', 'TENANT_ADMIN'));
    const sub = subscribe(client, closes, aurora.Tenant);
    await ended(sub);
    expect(sub.events).toEqual([]);
    expect(sub.errors.map((e) => e.extensions?.code)).toEqual(['NOT_FOUND']);
    expect(sub.errors[0]!.message).toBe('Tenant not found');
  });

  it('an anonymous socket is refused at connection_init: closed 4403 Forbidden, saying what to send', async () => {
    const { client, closes } = connect(null);
    const sub = subscribe(client, closes, aurora.Tenant);
    await ended(sub);
    expect(sub.events).toEqual([]);
    expect(sub.closed?.code).toBe(4403);
    expect(sub.closed?.reason).toMatch(/Bearer/);
  });

  async function refusedConnection(authorization: string): Promise<Subscription> {
    const { client, closes } = connect(null, { authorization });
    const sub = subscribe(client, closes, aurora.Tenant);
    await ended(sub);
    return sub;
  }
  const BAD_CONNECTION_PARAMS = [
    'Bearer fwt_not-a-real-token',
    'Bearer not-a-token-at-all',
    'Basic dXNlcjpwYXNz',
  ];

  it('an invalid bearer in the connection params is refused: no events, the subscription ends', async () => {
    for (const authorization of BAD_CONNECTION_PARAMS) {
      const sub = await refusedConnection(authorization);
      expect(sub.events, authorization).toEqual([]);
      expect(sub.errors.length > 0 || sub.closed !== null, authorization).toBe(true);
    }
  });

  it('that refusal happens at connection_init: close 4403 with the reason, not 4500 internal error', async () => {
    for (const authorization of BAD_CONNECTION_PARAMS) {
      const sub = await refusedConnection(authorization);
      // 4500 "Internal server error" (its only reason in production) tells the client
      // nothing it can act on; 4403 is graphql-ws's documented refusal of connection_init.
      expect(sub.closed, `${authorization}: errors ${JSON.stringify(sub.errors)}`).toMatchObject({
        code: 4403,
        reason: expect.stringMatching(/^Forbidden: /),
      });
      expect(sub.errors, authorization).toEqual([]);
    }
  });

  it('a member (no audit:read) gets FORBIDDEN', async () => {
    const { client, closes } = connect(t.token('aurora-research', 'MEMBER'));
    const sub = subscribe(client, closes, aurora.Tenant);
    await ended(sub);
    expect(sub.events).toEqual([]);
    expect(sub.errors.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
  });

  it("a borealis subscriber to its own tenant hears nothing of aurora's mutations", async () => {
    const a = connect(t.token('aurora-research', 'AUDITOR'));
    const b = connect(t.token('borealis-inference', 'TENANT_ADMIN'));
    const auroraSub = subscribe(a.client, a.closes, aurora.Tenant);
    const borealisSub = subscribe(b.client, b.closes, borealis.Tenant);
    // Both live (each proven by an event of its own tenant).
    const borealisMade = await untilLive(borealisSub, 'borealis-inference');
    await untilLive(auroraSub, 'aurora-research');
    const borealisBefore = borealisSub.events.length;
    const auroraBefore = auroraSub.events.length;
    expect(borealisSub.events.every((e) => borealisMade.includes(e.targetId))).toBe(true);

    const auroraProject = await createProject('aurora-research');
    const auroraEvents = await auroraSub.waitForEvents(auroraBefore + 1);
    expect(auroraEvents.some((e) => e.targetId === auroraProject)).toBe(true);
    // Events are published in commit order to every listener at once; give a stray one a
    // short, bounded time to arrive anyway.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(borealisSub.events.length).toBe(borealisBefore);
    expect(borealisSub.events.some((e) => e.targetId === auroraProject)).toBe(false);
    expect(borealisSub.errors).toEqual([]);

    // And the borealis subscription is still alive: its own next change arrives.
    const borealisProject = await createProject('borealis-inference');
    const borealisEvents = await borealisSub.waitForEvents(borealisBefore + 1);
    expect(borealisEvents.at(-1)!.targetId).toBe(borealisProject);
  });
});

describe('the webSocket configuration section', () => {
  it('unset: the defaults; set: whole numbers of at least 1; anything else throws naming the variable', () => {
    expect(load({ NODE_ENV: 'production' }).webSocket).toEqual(DEFAULT_WEBSOCKET_CONFIG);
    expect(
      load({
        NODE_ENV: 'test',
        FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_TENANT: '5000',
        FAIRWAY_WS_MAX_BUFFERED_BYTES: ' 1048576 ',
      }).webSocket,
    ).toMatchObject({ maxSubscriptionsPerTenant: 5000, maxBufferedBytes: 1_048_576 });
    for (const bad of ['0', '-3', '1.5', 'lots', '1e6']) {
      expect(() => load({ NODE_ENV: 'test', FAIRWAY_WS_MAX_CONNECTIONS_PER_TENANT: bad }), bad).toThrow(
        /FAIRWAY_WS_MAX_CONNECTIONS_PER_TENANT/,
      );
    }
  });
});
