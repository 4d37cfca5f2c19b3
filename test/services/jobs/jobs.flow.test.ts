import { type Client, createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { codesOf, startTestApp, type TestApp } from '../../helpers/harness.js';

let t: TestApp;
let aurora: Record<string, string>;
let borealis: Record<string, string>;
const clients: Client[] = [];

function ws(token: string): Client {
  const client = createClient({
    url: t.url.replace('http', 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    lazy: true,
    retryAttempts: 0,
  });
  clients.push(client);
  return client;
}

/** Collects a subscription's events until `until` says stop (or the timeout). */
function collect<T = any>(
  client: Client,
  query: string,
  variables: Record<string, unknown>,
  until: (events: T[]) => boolean,
  timeoutMs = 15_000,
): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const events: T[] = [];
    const timer = setTimeout(() => {
      dispose();
      resolve(events);
    }, timeoutMs);
    const dispose = client.subscribe<T>(
      { query, variables },
      {
        next: (message) => {
          if (message.errors) {
            clearTimeout(timer);
            dispose();
            reject(new Error(JSON.stringify(message.errors)));
            return;
          }
          events.push(message.data as T);
          if (until(events)) {
            clearTimeout(timer);
            dispose();
            resolve(events);
          }
        },
        error: (error) => {
          clearTimeout(timer);
          reject(error instanceof Error ? error : new Error(JSON.stringify(error)));
        },
        complete: () => undefined,
      },
    );
  });
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not reached in time');
}

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;

beforeAll(async () => {
  t = await startTestApp();
  aurora = await t.idsOf('aurora-research');
  borealis = await t.idsOf('borealis-inference');
});
afterAll(async () => {
  for (const client of clients) await client.dispose();
  await t?.close();
});

describe('submit → schedule → run', () => {
  it('a job moves PENDING → ADMITTED → RUNNING → SUCCEEDED and its subscriber sees each step', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const client = ws(member);
    // 3,000 declared seconds at time scale 1000: 3 s of real time, so the subscriber, which
    // connects after the submit, still sees it run on a loaded machine (200 ms was not enough).
    const res = await t.gql(member, SUBMIT, {
      in: {
        queueId: aurora.Queue,
        name: 'flow',
        podSets: [{ gpusPerPod: 2 }],
        expectedDurationSeconds: 3000,
      },
    });
    expect(res.body.errors).toBeUndefined();
    const jobId = res.body.data!.submitJob.id;
    const events = await collect<{ jobPosition: { state: string } }>(
      client,
      `subscription($id: ID!) { jobPosition(id: $id) { state position { inQueue } pendingReason { code } } }`,
      { id: jobId },
      (e) => e.at(-1)?.jobPosition.state === 'SUCCEEDED',
    );
    const states = events.map((e) => e.jobPosition.state);
    expect(states.at(-1)).toBe('SUCCEEDED');
    expect(new Set(states)).toContain('RUNNING');
    const job = await t.gql(
      member,
      `query($id: ID!) { node(id: $id) { ... on Job { state admittedAt startedAt finishedAt placement { node flavor pods gpuIndices } events { edges { node { type } } } } } }`,
      { id: jobId },
    );
    expect(job.body.errors).toBeUndefined();
    const node = job.body.data!.node;
    expect(node.state).toBe('SUCCEEDED');
    expect(node.placement[0]).toMatchObject({ flavor: 'h100-80g', pods: 1 });
    expect(node.placement[0].gpuIndices).toHaveLength(2);
    expect(node.events.edges.map((e: any) => e.node.type)).toEqual([
      'SUBMITTED',
      'ADMITTED',
      'STARTED',
      'SUCCEEDED',
    ]);
  });

  it('a pending job reports its position and a pending reason with numbers', async () => {
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    // Too big for the whole cohort (32 H100s): it stays pending.
    const res = await t.gql(admin, SUBMIT, {
      in: {
        queueId: aurora.Queue,
        name: 'too big',
        podSets: [{ count: 5, gpusPerPod: 8, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 60,
      },
    });
    const jobId = res.body.data!.submitJob.id;
    let node: any;
    for (let i = 0; i < 50; i++) {
      const q = await t.gql(
        admin,
        `query($id: ID!) { node(id: $id) { ... on Job { state position { inQueue queueLength } pendingReason { code message flavor requested nominal } } } }`,
        { id: jobId },
      );
      node = q.body.data!.node;
      if (node.pendingReason?.code !== 'NotYetEvaluated') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(node.state, JSON.stringify(node)).toBe('PENDING');
    expect(node.pendingReason.code).toBe('ExceedsMaxQuota');
    expect(node.pendingReason.requested).toBe(40);
    expect(node.position.inQueue).toBeGreaterThanOrEqual(1);
    const cancel = await t.gql(admin, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id: jobId });
    expect(cancel.body.data!.cancelJob.state).toBe('CANCELLED');
    const again = await t.gql(admin, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id: jobId });
    expect(codesOf(again)).toEqual(['CONFLICT']);
  });

  it('idempotent submit: the same key twice is one job; another payload under the key is a CONFLICT', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const input = {
      queueId: aurora.Queue,
      name: 'retry me',
      podSets: [{ gpusPerPod: 1 }],
      expectedDurationSeconds: 100000,
      idempotencyKey: 'ci-run-42',
    };
    const first = await t.gql(member, SUBMIT, { in: input });
    const second = await t.gql(member, SUBMIT, { in: input });
    expect(second.body.data!.submitJob.id).toBe(first.body.data!.submitJob.id);
    const racing = await Promise.all(
      [1, 2, 3].map(() => t.gql(member, SUBMIT, { in: { ...input, idempotencyKey: 'race-7' } })),
    );
    expect(new Set(racing.map((r) => r.body.data!.submitJob.id)).size).toBe(1);
    const different = await t.gql(member, SUBMIT, { in: { ...input, name: 'something else' } });
    expect(codesOf(different)).toEqual(['CONFLICT']);
    const list = await t.gql(
      member,
      `query($t: ID!) { jobs(tenantId: $t, filter: { states: [PENDING, ADMITTED, RUNNING] }, last: 100) { edges { node { name } } } }`,
      { t: aurora.Tenant },
    );
    expect(list.body.data!.jobs.edges.filter((e: any) => e.node.name === 'retry me')).toHaveLength(2);
  });

  it("filter { mine: true } lists only the caller's own submissions", async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const submit = (token: string, name: string) =>
      t.gql(token, SUBMIT, {
        in: { queueId: aurora.Queue, name, podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 100000 },
      });
    expect((await submit(member, 'mine-member')).body.errors).toBeUndefined();
    expect((await submit(admin, 'mine-admin')).body.errors).toBeUndefined();
    const names = async (token: string, mine: boolean) =>
      (
        await t.gql(
          token,
          `query($t: ID!, $mine: Boolean) { jobs(tenantId: $t, filter: { mine: $mine }, last: 500) { edges { node { name submittedByName } } } }`,
          { t: aurora.Tenant, mine },
        )
      ).body.data!.jobs.edges.map((e: any) => e.node.name as string);
    const all = await names(admin, false);
    expect(all).toEqual(expect.arrayContaining(['mine-member', 'mine-admin']));
    const adminOwn = await names(admin, true);
    expect(adminOwn).toContain('mine-admin');
    expect(adminOwn).not.toContain('mine-member');
    const memberOwn = await names(member, true);
    expect(memberOwn).toContain('mine-member');
    expect(memberOwn).not.toContain('mine-admin');
  });

  it("a reclaim preempts a borrower; the victim's owner hears why, the other tenant hears nothing of it", async () => {
    // Borealis is ELASTIC (borrows); aurora is GUARANTEED (lends its idle nominal, reclaims it at once).
    const borealisMember = t.token('borealis-inference', 'MEMBER');
    const auroraMember = t.token('aurora-research', 'MEMBER');
    const victimSide = collect<{ tenantEvents: any }>(
      ws(borealisMember),
      `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind reason jobId preemptorJobId } }`,
      { t: borealis.Tenant },
      (e) => e.some((x) => x.tenantEvents.kind === 'PREEMPTED'),
      10_000,
    );
    const otherSide = collect<{ tenantEvents: any }>(
      ws(auroraMember),
      `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind reason jobId } }`,
      { t: aurora.Tenant },
      () => false,
      4_000,
    );
    await new Promise((r) => setTimeout(r, 200));
    // More borrowers than fit, so fewer than 8 H100s stay free and the reclaimer must preempt.
    const borrowers = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        t.gql(borealisMember, SUBMIT, {
          in: {
            queueId: borealis.Queue,
            name: `borrower-${i}`,
            priorityClass: 'experiment',
            podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
            expectedDurationSeconds: 1e6,
          },
        }),
      ),
    );
    for (const b of borrowers) expect(b.body.errors).toBeUndefined();
    await waitFor(async () => {
      const q = await t.gql(
        borealisMember,
        `query($id: ID!) { node(id: $id) { ... on Queue { usage { flavor borrowed } } } }`,
        { id: borealis.Queue },
      );
      return q.body.data!.node.usage.find((u: any) => u.flavor === 'h100-80g').borrowed > 0;
    });
    const reclaim = await t.gql(auroraMember, SUBMIT, {
      in: {
        queueId: aurora.Queue,
        name: 'reclaimer',
        priorityClass: 'training',
        podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 1e6,
      },
    });
    expect(reclaim.body.errors).toBeUndefined();
    const seen = await victimSide;
    const preempted = seen.map((e) => e.tenantEvents).find((e) => e.kind === 'PREEMPTED');
    expect(preempted, JSON.stringify(seen)).toBeDefined();
    expect(preempted.reason).toBe('reclaim');
    expect(preempted.preemptorJobId).toBeNull(); // the preemptor belongs to another tenant
    const victim = await t.gql(
      borealisMember,
      `query($id: ID!) { node(id: $id) { ... on Job { state preemptionCount events { edges { node { type reason } } } } } }`,
      { id: preempted.jobId },
    );
    expect(victim.body.data!.node.preemptionCount).toBe(1);
    expect(victim.body.data!.node.events.edges.map((e: any) => e.node.type)).toContain('PREEMPTED');
    const other = await otherSide;
    expect(other.map((e) => e.tenantEvents.jobId)).not.toContain(preempted.jobId);
    expect(other.some((e) => e.tenantEvents.kind === 'PREEMPTED')).toBe(false);
  });
});

describe('subscriptions re-check rights on every event', () => {
  it('a revoked token stops receiving tenant events', async () => {
    const ada = await t.jwt('ada@aurora.example');
    const created = await t.gql(
      ada,
      `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret token { id } } }`,
      { in: { tenantId: aurora.Tenant, name: 'watcher', scopes: ['JOBS_READ', 'JOBS_WRITE'] } },
    );
    const { secret, token } = created.body.data!.createApiToken;
    const events: any[] = [];
    const client = ws(secret);
    const dispose = client.subscribe(
      {
        query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind jobId } }`,
        variables: { t: aurora.Tenant },
      },
      { next: (m) => events.push(m.data), error: () => undefined, complete: () => undefined },
    );
    const submit = (name: string) =>
      t.gql(ada, SUBMIT, {
        in: {
          queueId: aurora.Queue,
          name,
          podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }],
          expectedDurationSeconds: 1e6,
        },
      });
    // Bounded warm-up: the subscription is live once it hears one of our admissions.
    for (let i = 0; i < 20 && events.length === 0; i++) {
      await submit(`warm-${i}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(events.length).toBeGreaterThan(0);
    await t.gql(ada, `mutation($id: ID!) { revokeApiToken(id: $id) { revokedAt } }`, { id: token.id });
    const heard = events.length;
    const after = await submit('after-revocation');
    await waitFor(async () => {
      const j = await t.gql(ada, `query($id: ID!) { node(id: $id) { ... on Job { state } } }`, {
        id: after.body.data!.submitJob.id,
      });
      return j.body.data!.node.state !== 'PENDING';
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(events.length).toBe(heard);
    dispose();
  });
});

describe('subscriptions over server-sent events', () => {
  it('jobPosition streams over SSE on the same endpoint, authorized like HTTP', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const res = await t.gql(member, SUBMIT, {
      in: {
        queueId: aurora.Queue,
        name: 'sse',
        podSets: [{ count: 9, gpusPerPod: 8, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 60,
      },
    });
    const jobId = res.body.data!.submitJob.id;
    const open = (bearer: string | null) =>
      fetch(t.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
        },
        body: JSON.stringify({
          query: `subscription($id: ID!) { jobPosition(id: $id) { state pendingReason { code } } }`,
          variables: { id: jobId },
        }),
      });
    const stream = await open(member);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const reader = stream.body!.getReader();
    let text = '';
    while (!text.includes('"jobPosition"')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect(text).toContain('"state":"PENDING"');
    const outsider = await open(t.token('borealis-inference', 'MEMBER'));
    const outsiderText = await outsider.text();
    expect(outsiderText).toContain('NOT_FOUND');
    expect(outsiderText).not.toContain('PENDING');
    await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id: jobId });
  });
});
