import type { Client } from 'graphql-ws';
import pg from 'pg';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { decodeId } from '../../schema/common.js';
import { describeEachDialect } from '../helpers/database.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { eventually, liveSubscription, wsClient } from '../helpers/live-subscription.js';

/**
 * Each subscription event resolves in its own context (plugins/useSubscriptionEventContext):
 * nested fields read what is stored when the event is sent, under the caller's rights as
 * they are then. Over graphql-ws on a real socket.
 */
let t: TestApp;
let aurora: Record<string, string>;
let admin: string;
const clients: Client[] = [];

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const CANCEL = `mutation($id: ID!) { cancelJob(id: $id) { state } }`;
const STATE = `query($id: ID!) { node(id: $id) { ... on Job { state pendingReason { code } } } }`;
const NESTED_JOB = `job { state events { edges { node { type } } } queue { pendingCount } }`;

interface NestedJob {
  state: string;
  events: { edges: { node: { type: string } }[] };
  queue: { pendingCount: number };
}
const eventTypes = (job: NestedJob) => job.events.edges.map((e) => e.node.type);

function client(token: string): Client {
  const c = wsClient(t.url, token);
  clients.push(c);
  return c;
}

async function submit(token: string, input: Record<string, unknown>): Promise<string> {
  const res = await t.gql(token, SUBMIT, { in: { queueId: aurora.Queue, ...input } });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.submitJob.id;
}

async function cancel(token: string, id: string) {
  const res = await t.gql(token, CANCEL, { id });
  expect(res.body.errors).toBeUndefined();
}

async function stateOf(id: string): Promise<{ state: string; pendingReason: { code: string } | null }> {
  return (await t.gql(admin, STATE, { id })).body.data!.node;
}

/** Takes all the queue can ever get (16 H100s) for a long time. */
async function submitBlocker(): Promise<string> {
  const id = await submit(admin, {
    name: 'blocker',
    podSets: [{ count: 2, gpusPerPod: 8, flavors: ['h100-80g'] }],
    expectedDurationSeconds: 86_400,
  });
  await eventually(async () => (await stateOf(id)).state === 'RUNNING');
  return id;
}

/** One full H100 node: waits while the blocker runs. */
async function submitWaiting(name: string): Promise<string> {
  const id = await submit(admin, {
    name,
    podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
    expectedDurationSeconds: 86_400,
  });
  await eventually(async () => {
    const job = await stateOf(id);
    return job.state === 'PENDING' && job.pendingReason?.code !== 'NotYetEvaluated';
  });
  return id;
}

describeEachDialect('each subscription event sees fresh data all the way down', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    admin = t.token('aurora-research', 'TENANT_ADMIN');
    // idsOf submits a fixture job; these tests want the cluster to themselves.
    await cancel(admin, aurora.Job!);
  });
  afterAll(async () => {
    for (const c of clients.splice(0)) await c.dispose();
    await t?.close();
  });

  it('jobPosition: after a cancel, the event shows the job as stored then — state CANCELLED, a CANCELLED entry in its events, one fewer pending', async () => {
    // Five full nodes: more than the queue can ever get, so it waits until cancelled.
    const id = await submit(admin, {
      name: 'never fits',
      podSets: [{ count: 5, gpusPerPod: 8, flavors: ['h100-80g'] }],
      expectedDurationSeconds: 60,
    });
    await eventually(async () => (await stateOf(id)).pendingReason?.code === 'ExceedsMaxQuota');
    const sub = liveSubscription<{ state: string; job: NestedJob }>(
      client(admin),
      `subscription($id: ID!) { jobPosition(id: $id) { state ${NESTED_JOB} } }`,
      { id },
      (data) => data.jobPosition,
    );
    const [first] = await sub.until((values) => values.length >= 1);
    expect(first!.job.state).toBe('PENDING');
    expect(eventTypes(first!.job)).toEqual(['SUBMITTED']);
    const pendingBefore = first!.job.queue.pendingCount;
    expect(pendingBefore).toBeGreaterThanOrEqual(1);

    await cancel(admin, id);
    const values = await sub.until((v) => v.at(-1)?.state === 'CANCELLED');
    const last = values.at(-1)!;
    expect(last.job.state).toBe('CANCELLED');
    expect(eventTypes(last.job)).toEqual(['SUBMITTED', 'CANCELLED']);
    expect(last.job.queue.pendingCount).toBe(pendingBefore - 1);
    sub.dispose();
  });

  it('jobUpdated: the last of several events still reads fresh nested data (events ADMITTED, STARTED, CANCELLED in order)', async () => {
    const blocker = await submitBlocker();
    const id = await submitWaiting('waits for the blocker');
    const sub = liveSubscription<NestedJob>(
      client(admin),
      `subscription($id: ID!) { jobUpdated(id: $id) { state events { edges { node { type } } } queue { pendingCount } } }`,
      { id },
      (data) => data.jobUpdated,
    );
    // jobUpdated sends nothing until a change: give the subscription time to be set up.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await cancel(admin, blocker);
    await sub.until((values) => values.some((v) => v.state === 'RUNNING'));
    await cancel(admin, id);
    const values = await sub.until((v) => v.at(-1)?.state === 'CANCELLED');
    for (const value of values)
      expect(eventTypes(value).at(-1), JSON.stringify(values)).toBe(
        { ADMITTED: 'ADMITTED', RUNNING: 'STARTED', CANCELLED: 'CANCELLED' }[value.state],
      );
    expect(eventTypes(values.at(-1)!)).toEqual(['SUBMITTED', 'ADMITTED', 'STARTED', 'CANCELLED']);
    sub.dispose();
  });

  // Deterministic form of the race above: a transaction that commits while an event is between
  // reading the job and reading its events must be seen by both reads or by neither.
  // PostgreSQL only: SQLite runs on one connection, so no other transaction can commit between two reads of
  // one event.
  if (dialect === 'postgresql')
    it('an event reads one snapshot: a commit between its reads of the job and of its events is seen by neither', async () => {
      const id = await submit(admin, {
        name: 'before',
        podSets: [{ count: 5, gpusPerPod: 8, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 60,
      });
      await eventually(async () => (await stateOf(id)).pendingReason?.code === 'ExceedsMaxQuota');
      const sub = liveSubscription<{
        name: string;
        events: { edges: { node: { message: string | null } }[] };
      }>(
        client(admin),
        `subscription($id: ID!) { jobUpdated(id: $id) { name events { edges { node { message } } } } }`,
        { id },
        (data) => data.jobUpdated,
      );
      await new Promise((resolve) => setTimeout(resolve, 300)); // the subscription is in place
      const jobId = decodeId(id, 'Job');
      const seen = (value: (typeof sub.values)[number]) => [
        value.name,
        ...value.events.edges.map((e) => e.node.message),
      ];
      const publish = () =>
        t.app.events.publish('job-updated', jobId, { jobId, state: 'PENDING', at: Date.now() });

      const database = t.app.config.database as { url: string };
      const sql = new pg.Client({ connectionString: database.url });
      // Outside the writer's transaction, which would see pg_stat_activity as it was at its start.
      const observer = new pg.Client({ connectionString: database.url });
      await sql.connect();
      await observer.connect();
      try {
        // The job and its events change together, in one transaction that holds job_events
        // locked: the event reads the job, then waits for job_events until that commit.
        await sql.query('begin');
        await sql.query('lock table job_events in access exclusive mode');
        await sql.query(`update jobs set name = 'after' where id = $1`, [jobId]);
        await sql.query(`update job_events set message = 'after' where job_id = $1`, [jobId]);
        publish();
        await eventually(async () => {
          const waiting = await observer.query(
            `select 1 from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and wait_event_type = 'Lock' and query ilike 'select%job_events%' and position($1 in query) > 0`,
            [jobId],
          );
          return waiting.rowCount! > 0;
        });
        await sql.query('commit');
      } finally {
        await sql.end();
        await observer.end();
      }
      const [first] = await sub.until((values) => values.length >= 1);
      // As stored before the commit, all of it (the SUBMITTED entry's message unchanged).
      const [name, ...messages] = seen(first!);
      expect(name).toBe('before');
      expect(messages).toHaveLength(1);
      expect(messages).not.toContain('after');
      // The next event sees the commit, all of it: the stream goes on after a snapshot.
      publish();
      const values = await sub.until((v) => v.length >= 2);
      expect(seen(values[1]!)).toEqual(['after', 'after']);
      sub.dispose();
      await cancel(admin, id);
      // Each event's transaction ended with it: no session is left holding one open.
      const check = new pg.Client({ connectionString: database.url });
      await check.connect();
      try {
        await eventually(
          async () =>
            (
              await check.query(
                `select 1 from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
              )
            ).rowCount === 0,
        );
      } finally {
        await check.end();
      }
    });

  it('an event whose transaction cannot begin is sent as SERVICE_UNAVAILABLE, and the subscription goes on', async () => {
    // An app of its own: the refused connection is logged, which the shared app would count as a failure.
    const own = await startTestApp({ dialect, expectedServerErrors: /ECONNREFUSED/ });
    const c = wsClient(own.url, own.token('aurora-research', 'TENANT_ADMIN'));
    try {
      const { Job: id } = await own.idsOf('aurora-research');
      const jobId = decodeId(id!, 'Job');
      const sub = liveSubscription<{ id: string }>(
        c,
        `subscription($id: ID!) { jobUpdated(id: $id) { id } }`,
        { id },
        (data) => data.jobUpdated,
      );
      await new Promise((resolve) => setTimeout(resolve, 300)); // the subscription is in place
      const connection = own.app.orm.em.getConnection();
      const begin = connection.begin.bind(connection);
      let refuse = true;
      vi.spyOn(connection, 'begin').mockImplementation((options) => {
        // Only the subscription event's transaction (the scheduler may begin its own meanwhile).
        const limit = Error.stackTraceLimit;
        Error.stackTraceLimit = 100;
        const stack = new Error().stack ?? '';
        Error.stackTraceLimit = limit;
        if (refuse && stack.includes('useSubscriptionEventContext')) {
          refuse = false;
          return Promise.reject(
            Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
          );
        }
        return begin(options);
      });
      const publish = () =>
        own.app.events.publish('job-updated', jobId, { jobId, state: 'PENDING', at: Date.now() });
      publish();
      await eventually(async () => sub.errors.length > 0);
      expect(sub.errors.map((e) => (e as { extensions?: { code?: string } }).extensions?.code)).toEqual([
        'SERVICE_UNAVAILABLE',
      ]);
      // (The scheduler may publish the fixture job's own changes meanwhile: count from here.)
      const before = sub.values.length;
      publish();
      await eventually(async () => sub.values.length > before);
      expect(sub.values.at(-1)!.id).toBe(id);
      expect(sub.errors).toHaveLength(1);
      sub.dispose();
    } finally {
      vi.restoreAllMocks();
      await c.dispose();
      await own.close();
    }
  });

  it('a member removed from the tenant stops receiving events; added back, receives them again', async () => {
    const blocker = await submitBlocker();
    const id = await submitWaiting('watched by a member');
    const memberSub = liveSubscription<{ state: string }>(
      client(t.token('aurora-research', 'MEMBER')),
      `subscription($id: ID!) { jobPosition(id: $id) { state } }`,
      { id },
      (data) => data.jobPosition,
    );
    const adminSub = liveSubscription<{ state: string }>(
      client(admin),
      `subscription($id: ID!) { jobPosition(id: $id) { state } }`,
      { id },
      (data) => data.jobPosition,
    );
    await memberSub.until((values) => values.length === 1);
    await adminSub.until((values) => values.length === 1);

    const removed = await t.gql(admin, `mutation($id: ID!) { removeMember(id: $id) { removedMemberId } }`, {
      id: aurora.Member,
    });
    expect(removed.body.errors).toBeUndefined();
    // While removed, the job is admitted and starts: the admin hears it, the member must not.
    await cancel(admin, blocker);
    await adminSub.until((values) => values.at(-1)?.state === 'RUNNING');
    // Events are sent in order per subscription: let the member's copies of those be handled
    // (and dropped) before the membership comes back.
    await new Promise((resolve) => setTimeout(resolve, 500));

    const added = await t.gql(admin, `mutation($in: AddMemberInput!) { addMember(input: $in) { role } }`, {
      in: { tenantId: aurora.Tenant, email: 'max@aurora.example', role: 'MEMBER' },
    });
    expect(added.body.errors).toBeUndefined();
    await cancel(admin, id);
    await memberSub.until((values) => values.at(-1)?.state === 'CANCELLED');
    expect(memberSub.values.map((v) => v.state)).toEqual(['PENDING', 'CANCELLED']);
    expect(memberSub.errors).toEqual([]);
    memberSub.dispose();
    adminSub.dispose();
  });
});
