import type { Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobExplanation } from '../../../src/core/scheduling/types.js';
import { createEventBus } from '../../../src/events/bus.js';
import { JobPositionHub } from '../../../src/services/jobs/position-hub.js';
import type { JobPosition } from '../../../src/services/jobs/position-stream.js';
import { startTestApp, type TestApp } from '../../helpers/harness.js';
import { eventually, liveSubscription, wsClient } from '../../helpers/live-subscription.js';

/**
 * Position fan-out: one hub per server samples each watched job once per cycle,
 * however many subscribers it has, and offers a value only to the subscribers of a job whose
 * value changed; delivering it runs no SQL for a subscriber that did not select `job`.
 */
/** The statements of resolving an API token (src/auth/identity.ts), which the harness does per event
 * (reauthCacheMs: 0).
 */
const CREDENTIAL_CHECK = /from `(api_tokens|memberships|project_memberships)`/;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A scheduler whose explanations the test sets, counting explain calls per job. */
function fakeScheduler() {
  const explanations = new Map<string, JobExplanation>();
  const calls = new Map<string, number>();
  const listeners = new Set<() => void>();
  return {
    explanations,
    calls,
    listeners,
    set: (jobId: string, inQueue: number) =>
      explanations.set(jobId, {
        jobId,
        queue: 'q',
        state: 'pending',
        preemptions: 0,
        positionInQueue: inQueue,
        queuePending: 10,
        reason: 'WaitingForQuota',
      } as JobExplanation),
    explain(jobId: string) {
      calls.set(jobId, (calls.get(jobId) ?? 0) + 1);
      return explanations.get(jobId) ?? null;
    },
    onStateChange(listener: () => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    tick() {
      calls.clear();
      for (const listener of listeners) listener();
    },
  };
}

/** Reads a stream continuously: `values` is what has been delivered so far. */
function collect(stream: AsyncIterableIterator<JobPosition>): {
  values: JobPosition[];
  stream: AsyncIterableIterator<JobPosition>;
} {
  const values: JobPosition[] = [];
  void (async () => {
    for (;;) {
      const step = await stream.next();
      if (step.done) return;
      values.push(step.value);
    }
  })();
  return { values, stream };
}

describe('JobPositionHub', () => {
  it('a tick evaluates each watched job once however many subscribers it has; only subscribers whose value changed receive it', async () => {
    const scheduler = fakeScheduler();
    const events = createEventBus();
    const hub = new JobPositionHub({ scheduler, events });
    for (const id of ['crowded', 'quiet', 'other-tenant']) scheduler.set(id, 5);
    const crowded = Array.from({ length: 200 }, () =>
      collect(hub.watch({ id: 'crowded', state: 'PENDING', tenantId: 't1' })),
    );
    const quiet = Array.from({ length: 3 }, () =>
      collect(hub.watch({ id: 'quiet', state: 'PENDING', tenantId: 't1' })),
    );
    const other = collect(hub.watch({ id: 'other-tenant', state: 'PENDING', tenantId: 't2' }));
    const all = [...crowded, ...quiet, other];
    expect(hub.size).toEqual({ jobs: 3, readers: 204 });
    expect(scheduler.listeners.size).toBe(1);
    await sleep(5);
    // First values: each stream its own job's, and only that.
    for (const c of all) expect(c.values).toMatchObject([{ explanation: { positionInQueue: 5 } }]);
    expect(crowded.every((c) => c.values[0]!.jobId === 'crowded') && other.values[0]!.tenantId === 't2').toBe(
      true,
    );

    scheduler.set('crowded', 4);
    scheduler.tick();
    expect(Object.fromEntries(scheduler.calls)).toEqual({ crowded: 1, quiet: 1, 'other-tenant': 1 });
    await sleep(5);
    expect(
      crowded.every(
        (c) =>
          c.values.length === 2 &&
          c.values[1]!.jobId === 'crowded' &&
          c.values[1]!.tenantId === 't1' &&
          c.values[1]!.explanation?.positionInQueue === 4,
      ),
    ).toBe(true);
    // One value object for all 200 subscribers: computed once, not per subscriber.
    expect(new Set(crowded.map((c) => c.values[1])).size).toBe(1);
    // Unchanged: nothing offered, nothing read.
    for (const c of [...quiet, other]) expect(c.values).toHaveLength(1);

    // Another tenant's job moving reaches only its own subscriber.
    scheduler.set('other-tenant', 1);
    scheduler.tick();
    await sleep(5);
    expect(other.values.at(-1)).toMatchObject({
      jobId: 'other-tenant',
      tenantId: 't2',
      explanation: { positionInQueue: 1 },
    });
    expect(crowded.every((c) => c.values.length === 2) && quiet.every((c) => c.values.length === 1)).toBe(
      true,
    );

    // A tick that changes nothing sends nothing to anyone.
    scheduler.tick();
    await sleep(5);
    expect(all.reduce((n, c) => n + c.values.length, 0)).toBe(204 + 200 + 1);

    for (const c of all) await c.stream.return!();
    expect(hub.size).toEqual({ jobs: 0, readers: 0 });
    expect(scheduler.listeners.size).toBe(0);
  });

  it('a joiner starts from the value the others were last offered; state changes come from one job-updated subscription per job', async () => {
    const scheduler = fakeScheduler();
    const events = createEventBus();
    const hub = new JobPositionHub({ scheduler, events });
    scheduler.set('j', 3);
    const first = hub.watch({ id: 'j', state: 'PENDING', tenantId: 't1' });
    await first.next();
    scheduler.set('j', 2);
    scheduler.tick();
    expect((await first.next()).value).toMatchObject({ explanation: { positionInQueue: 2 } });
    // Between cycles the core would say 1: the joiner is shown the end of the last cycle, as the others were.
    scheduler.set('j', 1);
    const joiner = hub.watch({ id: 'j', state: 'PENDING', tenantId: 't1' });
    expect((await joiner.next()).value).toMatchObject({ explanation: { positionInQueue: 2 } });

    events.publish('job-updated', 'j', { jobId: 'j', state: 'ADMITTED', at: 0 });
    for (const stream of [first, joiner])
      expect((await stream.next()).value).toMatchObject({ state: 'ADMITTED', explanation: null });
    await first.return!();
    await joiner.return!();
    expect(scheduler.listeners.size).toBe(0);
  });
});

describe('jobPosition on a real server', () => {
  let t: TestApp;
  const statements: string[] = [];
  const clients: Client[] = [];
  let admin: string;
  let jobId: string;
  let aurora: Record<string, string>;

  beforeAll(async () => {
    t = await startTestApp({ onQuery: (sql) => statements.push(sql) });
    aurora = await t.idsOf('aurora-research');
    admin = t.token('aurora-research', 'TENANT_ADMIN');
    // Five full nodes: more than the queue can ever get, so it waits.
    const res = await t.gql(admin, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
      in: {
        queueId: aurora.Queue,
        name: 'watched',
        podSets: [{ count: 5, gpusPerPod: 8, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 600,
      },
    });
    expect(res.body.errors).toBeUndefined();
    jobId = res.body.data!.submitJob.id;
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.dispose()));
    await t?.close();
  });
  const client = (token: string) => {
    const c = wsClient(t.url, token);
    clients.push(c);
    return c;
  };
  const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;

  /** Waits until nothing has run SQL for a while (the scheduler's cycles, the subscribes). */
  async function quiesce(quietMs = 300) {
    let seen = statements.length;
    let quietSince = Date.now();
    while (Date.now() - quietSince < quietMs) {
      await sleep(25);
      if (statements.length !== seen) [seen, quietSince] = [statements.length, Date.now()];
    }
  }

  it('delivering a value runs no SQL for subscribers that do not select `job`, and reads the job for one that does', async () => {
    const POSITION = `subscription($id: ID!) { jobPosition(id: $id) { state position { inQueue queueLength } } }`;
    const subs = Array.from({ length: 20 }, () =>
      liveSubscription<{ state: string }>(client(admin), POSITION, { id: jobId }, (d) => d.jobPosition),
    );
    await Promise.all(subs.map((s) => s.until((v) => v.length === 1)));
    await quiesce();

    // A state change as the outbox announces it (no scheduler work, so every statement seen is delivery's).
    const from = statements.length;
    t.app.events.publish('job-updated', rawId(jobId), {
      jobId: rawId(jobId),
      state: 'ADMITTED',
      at: Date.now(),
    });
    await Promise.all(subs.map((s) => s.until((v) => v.at(-1)?.state === 'ADMITTED')));
    // Re-authenticating the caller is the identity cache's business (src/auth/identity-cache.ts,
    // shared by all of a token's subscriptions); nothing else may run: no snapshot transaction, no job row.
    expect(statements.slice(from).filter((sql) => !CREDENTIAL_CHECK.test(sql))).toEqual([]);

    // The same change for a subscriber that selected `job`: the row, read in the event's snapshot.
    const withJob = liveSubscription<{ state: string; job: { state: string } }>(
      client(admin),
      `subscription($id: ID!) { jobPosition(id: $id) { state job { state } } }`,
      { id: jobId },
      (d) => d.jobPosition,
    );
    await withJob.until((v) => v.length === 1);
    await quiesce();
    const before = statements.length;
    t.app.events.publish('job-updated', rawId(jobId), {
      jobId: rawId(jobId),
      state: 'PENDING',
      at: Date.now(),
    });
    await withJob.until((v) => v.at(-1)?.state === 'PENDING');
    await Promise.all(subs.map((s) => s.until((v) => v.at(-1)?.state === 'PENDING')));
    expect(withJob.values.at(-1)!.job.state).toBe('PENDING');
    expect(statements.slice(before).filter((sql) => /from `jobs`/.test(sql))).toHaveLength(1);
    for (const s of [...subs, withJob]) {
      expect(s.errors).toEqual([]);
      s.dispose();
    }
  });

  it("another tenant's caller learns nothing of the job: refused at subscribe, and nothing after", async () => {
    const outsider = liveSubscription<{ state: string }>(
      client(t.token('borealis-inference', 'TENANT_ADMIN')),
      `subscription($id: ID!) { jobPosition(id: $id) { state position { inQueue } } }`,
      { id: jobId },
      (d) => d.jobPosition,
    );
    await eventually(async () => outsider.errors.length > 0);
    expect(JSON.stringify(outsider.errors)).toMatch(/NOT_FOUND/);
    t.app.events.publish('job-updated', rawId(jobId), {
      jobId: rawId(jobId),
      state: 'ADMITTED',
      at: Date.now(),
    });
    await sleep(200);
    expect(outsider.values).toEqual([]);
    outsider.dispose();
  });
});
