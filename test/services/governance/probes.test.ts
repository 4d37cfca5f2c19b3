// Runtime probes through the gateway, on SQLite and PostgreSQL: the signals declared at
// submit (stored, shown on both read paths, part of the idempotency hash only when declared), the
// simulated cluster's model-driven reports written by the leader as a downsampled time series with
// the job's summary, the writer's averaging and batching, retention, a restarted leader keeping
// the samples, and another tenant learning nothing (NOT_FOUND, no events).
import { encodeGlobalID } from '@pothos/plugin-relay';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedBackend } from '../../../src/backends/simulated/simulated.js';
import { utilizationProfile } from '../../../src/core/governance/utilization-model.js';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { JobProbeSample } from '../../../src/persistence/governance/entities.js';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { Tenant } from '../../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../../src/persistence/tenant-filter.js';
import { ProbeWriter, probeRetentionTask } from '../../../src/services/governance/probes.js';
import { requestHash } from '../../../src/services/jobs/jobs.js';
import { createTestDatabase, describeEachDialect } from '../../helpers/database.js';
import { codesOf, expectOk, startTestApp, type TestApp, type TestAppOptions } from '../../helpers/harness.js';
import { liveSubscription, wsClient } from '../../helpers/live-subscription.js';

const FIELDS = 'id state workloadType latencySensitive';
const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { ${FIELDS} } }`;
const SUBMIT_MANY = `mutation($jobs: [SubmitJobInput!]!) { submitJobs(jobs: $jobs) { ${FIELDS} } }`;
const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { __typename } }`;
const JOB = `query($id: ID!, $last: Int) { node(id: $id) { ... on Job { ${FIELDS} probes(last: $last) { at gpuUtilization memoryUtilization } utilization { samples meanGpu lastGpu lastMemory lastAt } } } }`;
const LIST = `query($t: ID!) { jobs(tenantId: $t, last: 50) { edges { node { id workloadType latencySensitive utilization { samples } } } } }`;
const INTERVAL = 60_000;
const SEED = 1; // the simulated backend's default seed: the model the test recomputes

const appOptions = (dialect: 'sqlite' | 'postgresql'): TestAppOptions => ({
  dialect,
  backend: (now) => new SimulatedBackend({ timeScale: 1000, now, utilizationIntervalMs: 10 }),
  governance: { probes: { intervalMs: INTERVAL, flushMs: 20, retentionEveryMs: 3_600_000 } },
});

async function until<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 8000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describeEachDialect('runtime probes', (dialect) => {
  let t: TestApp;
  let member: string;
  const ids = { auroraQueue: '', auroraTenant: '', borealisTenant: '', auroraQueueRaw: '' };
  const systemEm = () => {
    const em = t.app.orm.em.fork({ clear: true });
    em.setFilterParams(TENANT_FILTER, { all: true });
    return em;
  };
  const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;
  const job = (over: Record<string, unknown> = {}) => ({
    queueId: ids.auroraQueue,
    name: 'probed',
    podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
    expectedDurationSeconds: 1e6,
    ...over,
  });
  const read = async (id: string, bearer = member, last = 60) =>
    (await t.gql(bearer, JOB, { id, last })).body;
  const rows = (jobId: string) => systemEm().find(JobProbeSample, { job: jobId }, { orderBy: { at: 'asc' } });

  beforeAll(async () => {
    t = await startTestApp(appOptions(dialect));
    member = t.token('aurora-research', 'MEMBER');
    const em = systemEm();
    for (const [slug, key] of [
      ['aurora-research', 'aurora'],
      ['borealis-inference', 'borealis'],
    ] as const) {
      const tenant = await em.findOneOrFail(Tenant, { slug });
      ids[`${key}Tenant`] = encodeGlobalID('Tenant', tenant.id);
      if (key === 'aurora') {
        const q =
          (await em.findOne(Queue, { name: 'aurora-training' })) ??
          (await em.findOneOrFail(Queue, { tenant: tenant.id }));
        ids.auroraQueue = encodeGlobalID('Queue', q.id);
        ids.auroraQueueRaw = q.id;
      }
    }
  });
  afterAll(async () => t?.close());

  it('stores the submit signals, shows them on both read paths, and hashes them for idempotency only when declared', async () => {
    const declared = await expectOk(t, member, SUBMIT, {
      in: job({
        name: 'ft',
        workloadType: 'FINE_TUNING',
        latencySensitive: true,
        idempotencyKey: 'probe-k1',
      }),
    });
    expect(declared.submitJob).toMatchObject({ workloadType: 'FINE_TUNING', latencySensitive: true });
    const plain = await expectOk(t, member, SUBMIT, {
      in: job({ name: 'plain', podSets: [{ gpusPerPod: 0, cpuMillisPerPod: 100 }] }),
    });
    expect(plain.submitJob).toMatchObject({ workloadType: null, latencySensitive: false });
    const stored = await systemEm().findOneOrFail(Job, { id: rawId(declared.submitJob.id) });
    expect([stored.workloadType, stored.latencySensitive]).toEqual(['FINE_TUNING', true]);
    // The plain-row path (tenant job lists) and the entity path (node) agree.
    const list = (await expectOk(t, member, LIST, { t: ids.auroraTenant })).jobs.edges.map(
      (e: any) => e.node,
    );
    expect(list.find((n: any) => n.id === declared.submitJob.id)).toMatchObject({
      workloadType: 'FINE_TUNING',
      latencySensitive: true,
    });
    expect(list.find((n: any) => n.id === plain.submitJob.id)).toMatchObject({
      workloadType: null,
      latencySensitive: false,
    });
    expect((await read(declared.submitJob.id)).data!.node).toMatchObject({
      workloadType: 'FINE_TUNING',
      latencySensitive: true,
    });

    // A retry is the same job; the same key with other signals is a different job: CONFLICT, nothing written.
    const again = await expectOk(t, member, SUBMIT, {
      in: job({
        name: 'ft',
        workloadType: 'FINE_TUNING',
        latencySensitive: true,
        idempotencyKey: 'probe-k1',
      }),
    });
    expect(again.submitJob.id).toBe(declared.submitJob.id);
    const count = async () => systemEm().count(Job, {});
    const before = await count();
    for (const changed of [
      { workloadType: 'TRAINING', latencySensitive: true },
      { workloadType: 'FINE_TUNING', latencySensitive: false },
      { latencySensitive: true },
    ]) {
      const res = await t.gql(member, SUBMIT, {
        in: job({ name: 'ft', idempotencyKey: 'probe-k1', ...changed }),
      });
      expect(codesOf(res), JSON.stringify(res.body)).toEqual(['CONFLICT']);
    }
    expect(await count()).toBe(before);
    // Undeclared signals leave the hash as it was before they existed.
    const base = { queueId: ids.auroraQueueRaw, name: 'x', priorityClass: 'training', podSets: [] };
    expect(requestHash({ ...base, workloadType: null, latencySensitive: false }, ids.auroraQueueRaw)).toBe(
      requestHash(base, ids.auroraQueueRaw),
    );
    expect(requestHash({ ...base, workloadType: 'TRAINING' }, ids.auroraQueueRaw)).not.toBe(
      requestHash(base, ids.auroraQueueRaw),
    );

    // The batch and the preview take them too; an unknown type is refused before anything is written.
    const batch = await expectOk(t, member, SUBMIT_MANY, {
      jobs: [
        job({ name: 'b1', workloadType: 'ONLINE_INFERENCE', latencySensitive: true }),
        job({ name: 'b2' }),
      ],
    });
    expect(batch.submitJobs.map((j: any) => [j.workloadType, j.latencySensitive])).toEqual([
      ['ONLINE_INFERENCE', true],
      [null, false],
    ]);
    await expectOk(t, member, PREVIEW, {
      in: job({ workloadType: 'BATCH_INFERENCE', latencySensitive: true }),
    });
    const bad = await t.gql(member, SUBMIT, { in: job({ workloadType: 'GAMING' }) });
    expect(bad.body.data ?? null).toBeNull();
    expect(bad.body.errors?.length).toBe(1);
    expect(await count()).toBe(before + 2);
    // Jobs that hold GPUs here would slow the next cases' cluster: cancel them.
    for (const id of [declared.submitJob.id, plain.submitJob.id, ...batch.submitJobs.map((j: any) => j.id)])
      await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id });
  });

  it("writes the simulated model's reports as one row per job per interval, averaged, with the summary; another tenant sees nothing", async () => {
    const borealis = t.token('borealis-inference', 'TENANT_ADMIN');
    const events = liveSubscription(
      wsClient(t.url, borealis),
      `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind jobId } }`,
      { t: ids.borealisTenant },
      (d) => d.tenantEvents,
    );
    const submitted = await expectOk(t, member, SUBMIT, {
      in: job({ name: 'online', workloadType: 'ONLINE_INFERENCE' }),
    });
    const id = submitted.submitJob.id as string;
    const jobId = rawId(id);
    await until(async () => (await read(id)).data?.node?.state === 'RUNNING', 'RUNNING');
    // The harness clock stands still: ~20 reports and ~10 flushes later, nothing spans an interval yet.
    await new Promise((r) => setTimeout(r, 200));
    expect(await rows(jobId)).toHaveLength(0);
    t.now.value += INTERVAL;
    const first = await until(
      async () => (await rows(jobId)).length === 1 && (await rows(jobId)),
      'the first row',
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(await rows(jobId)).toHaveLength(1);
    t.now.value += INTERVAL;
    const two = await until(
      async () => ((await rows(jobId)).length === 2 ? await rows(jobId) : false),
      'the second row',
    );
    expect(two[1]!.at - two[0]!.at).toBe(INTERVAL);
    // The job's own model: online inference, busy level ± 0.05, memory ± 0.02 (the clock stands still, so no
    // idle tail yet).
    const profile = utilizationProfile(SEED, jobId, 'ONLINE_INFERENCE', 1e9);
    for (const row of two) {
      expect(Math.abs(row.gpuUtilization - profile.busy)).toBeLessThanOrEqual(0.05 + 1e-9);
      expect(Math.abs(row.memoryUtilization! - profile.memory)).toBeLessThanOrEqual(0.02 + 1e-9);
      expect(row.tenant.id).toBe((await systemEm().findOneOrFail(Job, { id: jobId })).tenant.id);
    }
    expect(first[0]!.id).toBe(two[0]!.id);
    const node = (await read(id)).data!.node;
    expect(node.probes.map((p: any) => [Date.parse(p.at), p.gpuUtilization, p.memoryUtilization])).toEqual(
      two.map((r) => [r.at, r.gpuUtilization, r.memoryUtilization]),
    );
    expect(node.utilization).toEqual({
      samples: 2,
      meanGpu: expect.closeTo((two[0]!.gpuUtilization + two[1]!.gpuUtilization) / 2, 9),
      lastGpu: two[1]!.gpuUtilization,
      lastMemory: two[1]!.memoryUtilization,
      lastAt: new Date(two[1]!.at).toISOString(),
    });
    expect((await read(id, member, 1)).data!.node.probes).toHaveLength(1);
    for (const last of [0, 1441])
      expect(codesOf(await t.gql(member, JOB, { id, last }))).toEqual(['BAD_USER_INPUT']);
    // Metadata: the platform admin reads the figures; another tenant gets NOT_FOUND, as for any foreign job.
    expect((await read(id, t.token(null, 'PLATFORM_ADMIN'))).data!.node.utilization.samples).toBe(2);
    for (const outsider of [borealis, t.token('borealis-inference', 'MEMBER')]) {
      const res = await t.gql(outsider, JOB, { id, last: 5 });
      expect(codesOf(res), JSON.stringify(res.body)).toEqual(['NOT_FOUND']);
      expect(JSON.stringify(res.body)).not.toContain(jobId);
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(events.errors).toEqual([]);
    expect(JSON.stringify(events.values)).not.toContain(id);
    events.dispose();
    await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id });
  });

  it('averages the reports between rows, decides from the stored summary (a new leader keeps the interval), drops reports of ended jobs, one transaction per flush', async () => {
    // CPU-only jobs: the simulated cluster samples none, so only this writer writes their rows.
    const a = await expectOk(t, member, SUBMIT, {
      in: job({ name: 'cpu-a', podSets: [{ gpusPerPod: 0, cpuMillisPerPod: 100 }] }),
    });
    const b = await expectOk(t, member, SUBMIT, {
      in: job({ name: 'cpu-b', podSets: [{ gpusPerPod: 0, cpuMillisPerPod: 100 }] }),
    });
    const [ja, jb] = [rawId(a.submitJob.id), rawId(b.submitJob.id)];
    await until(
      async () =>
        (await read(a.submitJob.id)).data?.node?.state === 'RUNNING' &&
        (await read(b.submitJob.id)).data?.node?.state === 'RUNNING',
      'both RUNNING',
    );
    let transactions = 0;
    const ctx = {
      ended: () => false,
      write: (work: (em: any) => Promise<void>) => (
        transactions++, systemEm().transactional((em) => work(em))
      ),
    };
    const t0 = 1_900_000_000_000;
    const report = (jobId: string, at: number, gpu: number, memory?: number) => ({
      type: 'utilization' as const,
      jobId,
      at,
      gpuUtilization: gpu,
      ...(memory === undefined ? {} : { memoryUtilization: memory }),
    });
    const writer = new ProbeWriter({ intervalMs: 1000 });
    writer.onUtilization(report(ja, t0, 0.2, 0.5));
    writer.onUtilization(report(ja, t0 + 100, 0.4));
    writer.onUtilization(report(jb, t0 + 50, 0.9, 0.1));
    writer.onUtilization(report('00000000-0000-7000-8000-000000000000', t0, 0.5));
    writer.onUtilization(report(ja, t0 + 200, Number.NaN));
    expect(await writer.flush(ctx)).toBe(0); // nothing spans an interval: nothing read or written
    expect(transactions).toBe(0);
    writer.onUtilization(report(ja, t0 + 1000, 0.6));
    writer.onUtilization(report(jb, t0 + 1100, 0.3));
    writer.onUtilization(report('00000000-0000-7000-8000-000000000000', t0 + 1000, 0.5));
    expect(await writer.flush(ctx)).toBe(2); // both jobs in one transaction; the unknown job's reports dropped
    expect(transactions).toBe(1);
    expect(writer.pendingJobs()).toBe(0);
    writer.onUtilization(report(ja, t0 + 1500, 0.9));
    expect(await writer.flush(ctx)).toBe(0);
    expect(transactions).toBe(1);
    writer.onUtilization(report(ja, t0 + 2000, 0.5, 0.7));
    expect(await writer.flush(ctx)).toBe(1);
    const stored = await rows(ja);
    expect(stored.map((r) => [r.at, r.gpuUtilization, r.memoryUtilization])).toEqual([
      [t0 + 1000, expect.closeTo(0.4, 9), 0.5],
      [t0 + 2000, expect.closeTo(0.7, 9), 0.7],
    ]);
    expect((await rows(jb)).map((r) => [r.at, r.gpuUtilization, r.memoryUtilization])).toEqual([
      [t0 + 1100, expect.closeTo(0.6, 9), 0.1],
    ]);
    expect((await systemEm().findOneOrFail(Job, { id: ja })).probeSummary).toEqual({
      samples: 2,
      meanGpu: expect.closeTo(0.55, 9),
      lastGpu: expect.closeTo(0.7, 9),
      lastMemory: 0.7,
      lastAt: t0 + 2000,
    });
    // A fresh writer (a new leader) knows nothing in memory: the stored summary keeps the interval.
    const next = new ProbeWriter({ intervalMs: 1000 });
    next.onUtilization(report(ja, t0 + 1900, 0.1));
    next.onUtilization(report(ja, t0 + 2900, 0.2));
    expect(await next.flush(ctx)).toBe(0); // a whole interval of reports, but within the interval of the stored row
    next.onUtilization(report(ja, t0 + 3000, 0.3));
    expect(await next.flush(ctx)).toBe(1);
    expect((await rows(ja)).at(-1)).toMatchObject({
      at: t0 + 3000,
      gpuUtilization: expect.closeTo(0.2, 9),
      memoryUtilization: null,
    });
    // A report that arrives after the job ended is dropped.
    await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id: b.submitJob.id });
    next.onUtilization(report(jb, t0 + 5000, 0.8));
    next.onUtilization(report(jb, t0 + 6200, 0.8));
    expect(await next.flush(ctx)).toBe(0);
    expect(await rows(jb)).toHaveLength(1);
    expect(next.pendingJobs()).toBe(0);
    await t.gql(member, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id: a.submitJob.id });
  });

  it('forgets the last, never-due reports of a job silent for ten intervals (bounded memory on a long-lived leader)', async () => {
    const writer = new ProbeWriter({ intervalMs: 1000 });
    const ctx = { ended: () => false, write: async () => expect.fail('nothing is due: no transaction') };
    const report = (jobId: string, at: number) => ({
      type: 'utilization' as const,
      jobId,
      at,
      gpuUtilization: 0.5,
    });
    writer.onUtilization(report('ended-job', 0)); // its tail: less than an interval of reports, then it ended
    writer.onUtilization(report('live-job', 9_000));
    expect(await writer.flush(ctx)).toBe(0);
    expect(writer.pendingJobs()).toBe(2); // nine intervals: kept
    writer.onUtilization(report('live-job', 10_001));
    writer.onUtilization(report('other-live-job', 10_001));
    await writer.flush({ ...ctx, ended: () => true }); // the live job is due, but this term ended: nothing written
    expect(writer.pendingJobs()).toBe(2); // the ended job's tail is gone
  });

  it('retention deletes only the samples older than its horizon, in bounded audited batches', async () => {
    const em = systemEm();
    const someJob = await em.findOneOrFail(Job, { name: 'cpu-a' });
    const now = 1_950_000_000_000;
    const hour = 3_600_000;
    for (const [i, at] of [
      now - 3 * hour,
      now - 2 * hour,
      now - 2 * hour + 1,
      now - hour + 1,
      now,
    ].entries()) {
      em.create(JobProbeSample, {
        id: `0190${String(i).padStart(4, '0')}-0000-7000-8000-000000000000`,
        job: someJob,
        tenant: someJob.tenant,
        at,
        gpuUtilization: 0.5,
        memoryUtilization: null,
      });
    }
    await em.flush();
    const before = await systemEm().count(JobProbeSample, {});
    let transactions = 0;
    const ctx = {
      now,
      ended: () => false,
      write: (work: (em: any) => Promise<void>) => (transactions++, systemEm().transactional((e) => work(e))),
    };
    const task = probeRetentionTask({ retentionHours: 1, retentionBatch: 2 });
    // Every other test's rows are from around the real clock, far older than `now` − 1 h (the leader may still add some).
    const older = await systemEm().count(JobProbeSample, { at: { $lt: now - hour } });
    expect(older).toBeLessThan(before);
    const deleted = await task.purge(ctx);
    expect(deleted).toBeGreaterThanOrEqual(older);
    expect(transactions).toBe(Math.floor(deleted / 2) + 1);
    const kept = await systemEm().find(
      JobProbeSample,
      { at: { $gte: now - hour } },
      { orderBy: { at: 'asc' } },
    );
    expect(kept.map((r) => r.at)).toEqual([now - hour + 1, now]);
    expect(
      await systemEm().count(JobProbeSample, {
        id: {
          $in: [
            '01900000-0000-7000-8000-000000000000',
            '01900001-0000-7000-8000-000000000000',
            '01900002-0000-7000-8000-000000000000',
          ],
        },
      }),
    ).toBe(0);
    const audits = await systemEm().find(AuditEvent, { action: 'governance.probes.retention' });
    expect(audits.reduce((n, a) => n + (a.input as { deleted: number }).deleted, 0)).toBe(deleted);
    expect(audits.every((a) => a.tenant === null && a.actor === null)).toBe(true);
    expect(await task.purge(ctx)).toBe(0);
  });
});

describeEachDialect('runtime probes across a leader restart', (dialect) => {
  it('keeps the stored samples (they are in the database) and goes on at the interval', async () => {
    const db = await createTestDatabase(dialect);
    const first = await startTestApp({
      ...appOptions(dialect),
      database: { ...db, dispose: async () => undefined },
    });
    const member = first.token('aurora-research', 'MEMBER');
    let second: TestApp | null = null;
    try {
      const tenant = await first.app.orm.em
        .fork()
        .findOneOrFail(Tenant, { slug: 'aurora-research' }, { filters: false });
      const queue = await first.app.orm.em
        .fork()
        .findOneOrFail(Queue, { tenant: tenant.id }, { filters: false });
      const submitted = await expectOk(first, member, SUBMIT, {
        in: {
          queueId: encodeGlobalID('Queue', queue.id),
          name: 'survivor',
          podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e6,
          workloadType: 'TRAINING',
        },
      });
      const id = submitted.submitJob.id as string;
      const samples = async (app: TestApp) =>
        ((await app.gql(member, JOB, { id, last: 10 })).body.data?.node?.probes ?? []) as { at: string }[];
      await until(
        async () => (await first.gql(member, JOB, { id })).body.data?.node?.state === 'RUNNING',
        'RUNNING',
      );
      await new Promise((r) => setTimeout(r, 100));
      first.now.value += INTERVAL;
      await until(async () => (await samples(first)).length === 1, 'the first row');
      const kept = await samples(first);
      const clock = first.now.value;
      await first.close();
      second = await startTestApp({ ...appOptions(dialect), database: db, seed: false });
      second.now.value = clock;
      // The new leader restarts the job's run; its reports are within the interval of the stored row.
      await until(
        async () => (await second!.gql(member, JOB, { id })).body.data?.node?.state === 'RUNNING',
        'RUNNING again',
      );
      await new Promise((r) => setTimeout(r, 150));
      expect(await samples(second)).toEqual(kept);
      second.now.value += INTERVAL;
      const after = await until(
        async () => ((await samples(second!)).length === 2 ? await samples(second!) : false),
        'a row from the new leader',
      );
      expect(after[0]).toEqual(kept[0]);
      expect(Date.parse(after[1]!.at) - Date.parse(kept[0]!.at)).toBe(INTERVAL);
    } finally {
      await second?.close();
      if (!second) await db.dispose();
    }
  });
});

describe('runtime probe signals in the CLI job file', () => {
  it('are read, checked and sent', async () => {
    const { parseJobFile } = await import('../../../src/cli/tenant/job-file.js');
    const { toSubmitInput } = await import('../../../src/cli/tenant/submit.js');
    const job = parseJobFile(
      'name: serve\nworkloadType: ONLINE_INFERENCE\nlatencySensitive: true\npodSets:\n  - gpusPerPod: 1\n',
      'job.yaml',
    );
    expect(toSubmitInput(job, { queueId: 'q' }, 'k')).toMatchObject({
      workloadType: 'ONLINE_INFERENCE',
      latencySensitive: true,
    });
    expect(
      toSubmitInput(parseJobFile('name: plain\npodSets:\n  - gpusPerPod: 1\n', 'job.yaml'), {}, 'k'),
    ).not.toHaveProperty('workloadType');
    expect(() =>
      parseJobFile('name: x\nworkloadType: GAMING\npodSets:\n  - gpusPerPod: 1\n', 'job.yaml'),
    ).toThrow(/job.yaml:2: workloadType/);
  });
});

describe('runtime probe settings', () => {
  it('are read from the environment and validated', async () => {
    const { load, ConfigError } = await import('../../../src/config/index.js');
    expect(load({}).governance.probes).toEqual({
      intervalMs: 60_000,
      retentionHours: 168,
      pollMs: 30_000,
      prometheusUrl: undefined,
    });
    expect(
      load({
        FAIRWAY_PROBE_INTERVAL_MS: '15000',
        FAIRWAY_PROBE_RETENTION_HOURS: '24',
        FAIRWAY_PROBES_PROMETHEUS_URL: 'http://prometheus:9090',
        FAIRWAY_PROBES_PROMETHEUS_INTERVAL_MS: '10000',
      }).governance.probes,
    ).toEqual({
      intervalMs: 15_000,
      retentionHours: 24,
      pollMs: 10_000,
      prometheusUrl: 'http://prometheus:9090',
    });
    for (const bad of [
      { FAIRWAY_PROBE_INTERVAL_MS: '10' },
      { FAIRWAY_PROBE_RETENTION_HOURS: '0' },
      { FAIRWAY_PROBES_PROMETHEUS_URL: 'ftp://x' },
    ])
      expect(() => load(bad)).toThrow(ConfigError);
  });
});
