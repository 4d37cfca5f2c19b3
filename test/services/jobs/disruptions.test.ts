// Disruptions and retries through the graph, on the simulated cluster: a run the cluster stops
// (eviction, drain, a lost node) sends the job back to pending with a DISRUPTED event, is charged
// only for the time it held GPUs, and runs again; the job's own failures fail it, or are retried
// in place up to its maxRetries; a maxRetries out of range is refused with nothing written.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SimulatedBackend } from '../../../src/backends/simulated/simulated.js';
import type { TenantEventPayload } from '../../../src/events/bus.js';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { UsageRecord } from '../../../src/persistence/metering/entities.js';
import { Tenant } from '../../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import { expectRefusedUnchanged, startTestApp, type TestApp } from '../../helpers/harness.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id maxRetries } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { state exitReason maxRetries disruptionCount events { edges { node { type reason message } } } } } }`;

describeEachDialect('disruptions and retries', (dialect) => {
  let t: TestApp;
  let member: string;
  let queueId = '';

  const systemEm = () => {
    const em = t.app.orm.em.fork({ clear: true });
    em.setFilterParams(TENANT_FILTER, { all: true });
    return em;
  };
  const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;
  async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 8000) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`not reached in time: ${what}`);
  }
  const stateOf = async (id: string) => (await systemEm().findOneOrFail(Job, { id: rawId(id) })).state;
  const submit = async (input: Record<string, unknown>) => {
    const res = await t.gql(member, SUBMIT, {
      in: { queueId, podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }], ...input },
    });
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    return (res.body.data as any).submitJob.id as string;
  };

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    member = t.token('aurora-research', 'MEMBER');
    const q = await t.gql(member, `{ tenant(slug: "aurora-research") { queues { id name } } }`);
    queueId = (q.body.data as any).tenant.queues[0].id;
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('a disrupted run goes back to pending with a DISRUPTED event, is charged only for its hold, and runs again', async () => {
    const events: TenantEventPayload[] = [];
    const tenant = await systemEm().findOneOrFail(Tenant, { slug: 'aurora-research' });
    const stream = t.app.events.subscribe('tenant-event', tenant.id);
    void (async () => {
      for await (const event of stream) events.push(event);
    })();
    const id = await submit({ name: 'disrupted', expectedDurationSeconds: 1e6 });
    await until(async () => (await stateOf(id)) === 'RUNNING', 'running');
    const backend = t.app.backend as SimulatedBackend;
    // The harness's clock is the backend's: the run holds its GPUs for 60 s of it.
    t.now.value += 60_000;
    const disruptedAt = t.now.value;
    expect(backend.disrupt(rawId(id), 'EvictionByEvictionAPI: Eviction API: evicting')).toBe(true);
    await until(
      async () => (await systemEm().findOneOrFail(Job, { id: rawId(id) })).disruptionCount === 1,
      'requeued',
    );
    // Held for its backoff (the test configuration's 300 ms, in the scheduler's clock), then admitted again.
    const waiting = await t.gql(
      member,
      `query($id: ID!) { node(id: $id) { ... on Job { state pendingReason { code message } } } }`,
      { id },
    );
    expect((waiting.body.data as any).node.state).toBe('PENDING');
    expect((waiting.body.data as any).node.pendingReason.message).toMatch(
      /^Stopped by the cluster \(see its DISRUPTED events\); it waits out its backoff and is not admitted again before /,
    );
    t.now.value += 1000;
    await until(async () => (await stateOf(id)) === 'RUNNING', 'running again');
    const res = await t.gql(member, JOB, { id });
    const job = (res.body.data as any).node;
    expect(job.disruptionCount).toBe(1);
    const types = job.events.edges.map((e: any) => e.node.type);
    expect(types).toEqual(expect.arrayContaining(['STARTED', 'DISRUPTED', 'ADMITTED']));
    expect(types.indexOf('DISRUPTED')).toBeLessThan(types.lastIndexOf('STARTED'));
    const disrupted = job.events.edges.find((e: any) => e.node.type === 'DISRUPTED').node;
    expect(disrupted.message).toMatch(/EvictionByEvictionAPI/);
    expect(disrupted.reason).toBe('Disrupted');
    // The first run's hold was closed at the disruption: its 'disrupted' rows end no later than it, the last
    // one at it (two rows when the 60 s hold crossed an hour: the ledger cuts intervals at hours).
    const rows = await systemEm().find(UsageRecord, { job: rawId(id) }, { orderBy: { startedAt: 'asc' } });
    const closed = rows.filter((r) => r.closedBy === 'disrupted');
    expect(closed.length).toBe(
      Math.floor(disruptedAt / 3_600_000) > Math.floor((disruptedAt - 60_000) / 3_600_000) ? 2 : 1,
    );
    expect(closed.every((r) => r.endedAt.getTime() <= disruptedAt)).toBe(true);
    expect(closed.at(-1)!.endedAt.getTime()).toBe(disruptedAt);
    const held = rows.filter((r) => r.endedAt.getTime() <= disruptedAt);
    expect(held.reduce((sum, r) => sum + r.gpuSeconds, 0)).toBeCloseTo(60 * 1000, 3); // 1 GPU × 60 s × time scale
    // No interval is charged twice: the rows never overlap.
    for (let i = 1; i < rows.length; i++)
      expect(rows[i]!.startedAt.getTime()).toBeGreaterThanOrEqual(rows[i - 1]!.endedAt.getTime());
    await until(() => events.some((e) => e.kind === 'DISRUPTED'), 'tenant event');
    const event = events.find((e) => e.kind === 'DISRUPTED') as Extract<
      TenantEventPayload,
      { kind: 'DISRUPTED' }
    >;
    expect(event.jobId).toBe(rawId(id));
    expect(event.message).toMatch(/EvictionByEvictionAPI/);
    await stream.return?.(undefined);
  });

  it('the job’s own failure fails it without retries, and is retried maxRetries times with them', async () => {
    const once = await submit({ name: 'fails', simulate: { fail: true, failAfterSeconds: 200 } });
    await until(async () => (await stateOf(once)) === 'FAILED', 'failed');
    const started = Date.now();
    const retried = await submit({
      name: 'retried',
      maxRetries: 2,
      simulate: { fail: true, failAfterSeconds: 200 },
    });
    await until(async () => (await stateOf(retried)) === 'RUNNING', 'running');
    // Three runs of 200 declared seconds (0.2 s each at the test's time scale) before it fails.
    await until(async () => (await stateOf(retried)) === 'FAILED', 'failed after its retries');
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    const job = (await t.gql(member, JOB, { id: retried })).body.data as any;
    expect(job.node.maxRetries).toBe(2);
    expect(job.node.events.edges.filter((e: any) => e.node.type === 'STARTED')).toHaveLength(1);
  });

  it('refuses maxRetries outside 0–10 with BAD_USER_INPUT and writes nothing', async () => {
    for (const maxRetries of [11, -1]) {
      const res = await expectRefusedUnchanged(
        t,
        member,
        SUBMIT,
        { in: { queueId, name: 'bad', podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }], maxRetries } },
        'BAD_USER_INPUT',
      );
      expect(res.body.errors?.[0]?.message).toMatch(/maxRetries|at (most 10|least 0)/);
    }
  });
});
