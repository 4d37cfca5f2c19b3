// Checkpoint-aware preemption through the graph: a job's checkpoint declaration and a queue's
// minimum run before reclaim are validated (refusals write nothing), stored, read back (entity and
// plain-row paths), mapped into the core's specs in the backend's clock, and restored after a
// rebuild; a preemption tells its victim's tenant the GPU-hours it lost (job events, tenant events,
// /metrics) and the simulated backend keeps a resumable victim's progress.
import { encodeGlobalID } from '@pothos/plugin-relay';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SimulatedBackend } from '../../../src/backends/simulated/simulated.js';
import type { TenantEventPayload } from '../../../src/events/bus.js';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { Tenant } from '../../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../../src/persistence/tenant-filter.js';
import { jobSpec, queueSpec } from '../../../src/services/scheduling/specs.js';
import { describeEachDialect } from '../../helpers/database.js';
import {
  codesOf,
  expectOk,
  expectRefusedUnchanged,
  startTestApp,
  type TestApp,
} from '../../helpers/harness.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id checkpoint { intervalSeconds resumable } } }`;
const SUBMIT_MANY = `mutation($jobs: [SubmitJobInput!]!) { submitJobs(jobs: $jobs) { id checkpoint { intervalSeconds resumable } } }`;
const CREATE_QUEUE = `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id minRunBeforeReclaimSeconds fairShareMaxLostRunSeconds } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { state checkpoint { intervalSeconds resumable } events { edges { node { type reason lostGpuHours } } } } } }`;
const TIME_SCALE = 1000; // the test config's simulated time scale

describeEachDialect('checkpoint-aware preemption, gateway side', (dialect) => {
  let t: TestApp;
  let member: string;
  let platform: string;
  const ids = { auroraQueue: '', auroraTenant: '', borealisQueue: '', borealisTenant: '' };

  const systemEm = () => {
    const em = t.app.orm.em.fork({ clear: true });
    em.setFilterParams(TENANT_FILTER, { all: true });
    return em;
  };
  const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;
  const job = (over: Record<string, unknown> = {}) => ({
    queueId: ids.auroraQueue,
    name: 'ckpt',
    podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
    expectedDurationSeconds: 1e6,
    ...over,
  });
  async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 6000) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`not reached in time: ${what}`);
  }

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    member = t.token('aurora-research', 'MEMBER');
    platform = t.token(null, 'PLATFORM_ADMIN');
    const em = systemEm();
    for (const [slug, queue, key] of [
      ['aurora-research', 'aurora-training', 'aurora'],
      ['borealis-inference', 'borealis-serving', 'borealis'],
    ] as const) {
      const tenant = await em.findOneOrFail(Tenant, { slug });
      const q =
        (await em.findOne(Queue, { name: queue })) ?? (await em.findOneOrFail(Queue, { tenant: tenant.id }));
      ids[`${key}Tenant`] = encodeGlobalID('Tenant', tenant.id);
      ids[`${key}Queue`] = encodeGlobalID('Queue', q.id);
    }
  });
  afterAll(async () => t?.close());

  it('refuses bad checkpoint and minimum-run values with BAD_USER_INPUT, writing nothing', async () => {
    for (const [checkpoint, message] of [
      [{ intervalSeconds: 0 }, /intervalSeconds: must be positive/],
      [{ intervalSeconds: -60 }, /intervalSeconds: must be positive/],
      [{ intervalSeconds: 90 * 86_400 + 1 }, /intervalSeconds: at most 90 days/],
    ] as const) {
      const res = await expectRefusedUnchanged(
        t,
        member,
        SUBMIT,
        { in: job({ checkpoint }) },
        'BAD_USER_INPUT',
      );
      expect(res.body.errors![0]!.message).toMatch(message);
      // One bad job refuses the whole batch.
      await expectRefusedUnchanged(
        t,
        member,
        SUBMIT_MANY,
        { jobs: [job({ name: 'fine' }), job({ checkpoint })] },
        'BAD_USER_INPUT',
      );
    }
    // Not an Int: refused by the graph's own variable coercion, before any resolver.
    const fractional = await t.gql(member, SUBMIT, { in: job({ checkpoint: { intervalSeconds: 1.5 } }) });
    expect(fractional.body.data ?? null).toBeNull();
    expect(codesOf(fractional).length).toBe(1);
    const queue = (preemption: Record<string, unknown>) => ({
      in: {
        name: 'ckpt-probe',
        tenantId: ids.auroraTenant,
        quotas: [{ flavor: 'h100-80g', nominal: 0 }],
        preemption,
      },
    });
    for (const preemption of [
      { minRunBeforeReclaimSeconds: -1 },
      { minRunBeforeReclaimSeconds: 7 * 86_400 + 1 },
      { fairShareMaxLostRunSeconds: -5 },
    ]) {
      await expectRefusedUnchanged(t, platform, CREATE_QUEUE, queue(preemption), 'BAD_USER_INPUT');
    }
  });

  it("stores a job's checkpoint, reads it back through the entity and the plain-row paths, and maps it into the core in backend time", async () => {
    const one = await expectOk(t, member, SUBMIT, {
      in: job({ name: 'interval', checkpoint: { intervalSeconds: 600 } }),
    });
    expect(one.submitJob.checkpoint).toEqual({ intervalSeconds: 600, resumable: false });
    const many = await expectOk(t, member, SUBMIT_MANY, {
      jobs: [
        job({ name: 'resumable', checkpoint: { resumable: true } }),
        job({ name: 'plain' }),
        job({ name: 'empty', checkpoint: {} }),
      ],
    });
    expect(many.submitJobs.map((j: { checkpoint: unknown }) => j.checkpoint)).toEqual([
      { intervalSeconds: null, resumable: true },
      null,
      null,
    ]);
    const list = await expectOk(
      t,
      member,
      `query($t: ID!) { jobs(tenantId: $t, last: 50) { edges { node { name checkpoint { intervalSeconds resumable } } } } }`,
      { t: ids.auroraTenant },
    );
    const byName = Object.fromEntries(
      list.jobs.edges.map((e: { node: { name: string; checkpoint: unknown } }) => [
        e.node.name,
        e.node.checkpoint,
      ]),
    );
    expect(byName).toMatchObject({
      interval: { intervalSeconds: 600, resumable: false },
      resumable: { intervalSeconds: null, resumable: true },
      plain: null,
      empty: null,
    });
    const node = await expectOk(t, member, JOB, { id: one.submitJob.id });
    expect(node.node.checkpoint).toEqual({ intervalSeconds: 600, resumable: false });

    const row = await systemEm().findOneOrFail(Job, { id: rawId(one.submitJob.id) }, { populate: ['queue'] });
    expect([row.checkpointIntervalMs, row.checkpointResumable]).toEqual([600_000, false]);
    // The spec the core gets at a submit and after a restart: the interval in the backend's clock.
    expect(jobSpec(row, row.queue.name, TIME_SCALE).checkpoint).toEqual({ intervalMs: 600 });
    expect(jobSpec(row, row.queue.name, 1).checkpoint).toEqual({ intervalMs: 600_000 });
    const plain = await systemEm().findOneOrFail(
      Job,
      { id: rawId(many.submitJobs[1].id) },
      { populate: ['queue'] },
    );
    expect(jobSpec(plain, plain.queue.name, TIME_SCALE)).not.toHaveProperty('checkpoint');
    for (const id of [one.submitJob.id, ...many.submitJobs.map((j: { id: string }) => j.id)])
      await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id });
  });

  it('the checkpoint is part of an idempotent submit: same key and checkpoint is the same job, another checkpoint a CONFLICT', async () => {
    const input = job({ name: 'keyed', idempotencyKey: 'ckpt-key-1', checkpoint: { intervalSeconds: 300 } });
    const first = await expectOk(t, member, SUBMIT, { in: input });
    const again = await expectOk(t, member, SUBMIT, { in: input });
    expect(again.submitJob.id).toBe(first.submitJob.id);
    const other = await t.gql(member, SUBMIT, { in: { ...input, checkpoint: { intervalSeconds: 301 } } });
    expect(codesOf(other)).toEqual(['CONFLICT']);
    await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id: first.submitJob.id });
  });

  it("stores a queue's minimum run before reclaim and maps it into the core in backend time", async () => {
    const created = await expectOk(t, platform, CREATE_QUEUE, {
      in: {
        name: 'ckpt-queue',
        tenantId: ids.auroraTenant,
        quotas: [{ flavor: 'h100-80g', nominal: 0 }],
        preemption: {
          reclaimWithinCohort: 'ANY',
          minRunBeforeReclaimSeconds: 1800,
          fairShareMaxLostRunSeconds: 600,
        },
      },
    });
    expect(created.createQueue).toMatchObject({
      minRunBeforeReclaimSeconds: 1800,
      fairShareMaxLostRunSeconds: 600,
    });
    const row = await systemEm().findOneOrFail(Queue, { name: 'ckpt-queue' });
    expect(row.preemption).toMatchObject({
      reclaimWithinCohort: 'Any',
      minRunBeforeReclaimMs: 1_800_000,
      fairShareMaxLostRunMs: 600_000,
    });
    expect(queueSpec(row, null, TIME_SCALE).preemption).toMatchObject({
      minRunBeforeReclaimMs: 1800,
      fairShareMaxLostRunMs: 600,
    });
    const updated = await expectOk(
      t,
      platform,
      `mutation($in: UpdateQueueInput!) { updateQueue(input: $in) { minRunBeforeReclaimSeconds fairShareMaxLostRunSeconds } }`,
      { in: { id: created.createQueue.id, preemption: { reclaimWithinCohort: 'ANY' } } },
    );
    expect(updated.updateQueue).toEqual({
      minRunBeforeReclaimSeconds: null,
      fairShareMaxLostRunSeconds: null,
    });
  });

  it("after a rebuild from the database, a reclaim takes the resumable borrower (it loses nothing); the victim's tenant hears the GPU-hours lost, the other tenant nothing", async () => {
    const borealis = t.token('borealis-inference', 'MEMBER');
    const auroraAdmin = t.token('aurora-research', 'TENANT_ADMIN');
    const heard: Record<string, TenantEventPayload[]> = { aurora: [], borealis: [] };
    const listen = async (key: 'aurora' | 'borealis', tenantGlobalId: string) => {
      for await (const event of t.app.events.subscribe('tenant-event', rawId(tenantGlobalId)))
        heard[key]!.push(event);
    };
    void listen('aurora', ids.auroraTenant);
    void listen('borealis', ids.borealisTenant);
    const borrower = (name: string, checkpoint?: Record<string, unknown>) =>
      expectOk(t, borealis, SUBMIT, {
        in: {
          queueId: ids.borealisQueue,
          name,
          priorityClass: 'experiment',
          podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e6,
          ...(checkpoint ? { checkpoint } : {}),
        },
      });
    const stateOf = async (id: string) => (await expectOk(t, borealis, JOB, { id })).node.state as string;
    // The resumable borrower runs longest: without its checkpoint it would cost the most per GPU and be
    // taken last.
    const resumable = (await borrower('resumable', { resumable: true })).submitJob.id as string;
    await until(async () => (await stateOf(resumable)) === 'RUNNING', 'resumable borrower running');
    t.now.value += 10_000;
    const others: string[] = [];
    for (const name of ['plain-1', 'plain-2', 'plain-3'])
      others.push((await borrower(name)).submitJob.id as string);
    await until(
      async () => (await Promise.all(others.map(stateOf))).every((s) => s === 'RUNNING'),
      'all borrowers running',
    );
    t.now.value += 10_000;
    // As after a restart: the core is rebuilt from the rows (checkpoint columns included).
    await t.app.scheduler.rebuild();
    const reclaimer = await expectOk(t, auroraAdmin, SUBMIT, {
      in: job({ name: 'reclaimer', podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }] }),
    });
    await until(async () => (await stateOf(resumable)) === 'PENDING', 'the resumable borrower preempted');
    for (const id of others) expect(await stateOf(id)).toBe('RUNNING');
    const events = (await expectOk(t, borealis, JOB, { id: resumable })).node.events.edges.map(
      (e: { node: unknown }) => e.node,
    );
    expect(events).toContainEqual({ type: 'PREEMPTED', reason: 'reclaim', lostGpuHours: 0 });
    expect(
      events
        .filter((e: { type: string }) => e.type !== 'PREEMPTED')
        .every((e: { lostGpuHours: unknown }) => e.lostGpuHours === null),
    ).toBe(true);
    await until(() => heard.borealis!.some((e) => e.kind === 'PREEMPTED'), 'tenant event');
    expect(heard.borealis!.find((e) => e.kind === 'PREEMPTED')).toMatchObject({
      jobId: rawId(resumable),
      reason: 'reclaim',
      lostGpuHours: 0,
    });
    // The simulated cluster keeps the resumable run's progress: 20 s of the backend's clock, in declared
    // time.
    const backend = t.app.backend as SimulatedBackend;
    await until(() => backend.resumePoint(rawId(resumable)) > 0, 'suspended with progress');
    expect(backend.resumePoint(rawId(resumable))).toBe(20_000 * TIME_SCALE);

    // A second reclaim must take a borrower without checkpoints: it loses its 8 GPUs × 10 s (backend) since
    // admission.
    await expectOk(t, auroraAdmin, SUBMIT, {
      in: job({ name: 'reclaimer-2', podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }] }),
    });
    await until(
      async () => (await Promise.all(others.map(stateOf))).includes('PENDING'),
      'a plain borrower preempted',
    );
    const victim = others[(await Promise.all(others.map(stateOf))).indexOf('PENDING')]!;
    const lost = (await expectOk(t, borealis, JOB, { id: victim })).node.events.edges
      .map((e: { node: { type: string; lostGpuHours: number } }) => e.node)
      .find((e: { type: string }) => e.type === 'PREEMPTED').lostGpuHours;
    expect(lost).toBeCloseTo((8 * 10_000 * TIME_SCALE) / 3_600_000, 6);
    // Beside each job's preemption count, the sum of what its preemptions threw away.
    const totals = await expectOk(
      t,
      borealis,
      `query($a: ID!, $b: ID!, $c: ID!) { a: node(id: $a) { ... on Job { preemptionCount lostGpuHours } } b: node(id: $b) { ... on Job { preemptionCount lostGpuHours } } c: node(id: $c) { ... on Job { preemptionCount lostGpuHours } } }`,
      {
        a: resumable,
        b: victim,
        c: others.find((id) => id !== victim)!,
      },
    );
    expect(totals.a).toEqual({ preemptionCount: 1, lostGpuHours: 0 });
    expect(totals.b.preemptionCount).toBe(1);
    expect(totals.b.lostGpuHours).toBeCloseTo(lost, 9);
    expect(totals.c).toEqual({ preemptionCount: 0, lostGpuHours: 0 });
    const metrics = await t.app.metrics.registry
      .getSingleMetric('fairway_scheduler_preemption_lost_gpu_hours_total')!
      .get();
    const borealisQueueName = (await systemEm().findOneOrFail(Queue, { id: rawId(ids.borealisQueue) })).name;
    const sample = metrics.values.find(
      (v) => v.labels.queue === borealisQueueName && v.labels.reason === 'reclaim',
    );
    expect(sample?.value).toBeCloseTo(lost, 6);
    // Never another tenant's preemption, nor its losses.
    expect(heard.aurora!.some((e) => e.kind === 'PREEMPTED')).toBe(false);
    const crossTenant = await t.gql(member, JOB, { id: victim });
    expect(codesOf(crossTenant)).toEqual(['NOT_FOUND']);
    void reclaimer;
  });
});
