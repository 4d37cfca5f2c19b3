// What the controller reads (controller-inputs.ts) from a bare database: time-weighted GPU
// means from the leader's samples, pending GPUs and the oldest wait, the SLA estimate from job rows
// (fitted unused nominal at submit, not admitted borrowing, admitted within the limit; undecided
// jobs left out) and probed utilization in the window; and the replay flags a tampered record.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { controllerStep } from '../../../src/core/governance/controller.js';
import { BUILT_IN_POLICIES } from '../../../src/core/governance/policies.js';
import { DEFAULT_CONTROLLER_SETTINGS } from '../../../src/core/governance/types.js';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { JobProbeSample } from '../../../src/persistence/governance/entities.js';
import { uuidv7 } from '../../../src/persistence/ids.js';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { migrate, openDatabase } from '../../../src/persistence/orm.js';
import { Project, Tenant } from '../../../src/persistence/tenancy/entities.js';
import { scopedEntityManager } from '../../../src/persistence/tenant-filter.js';
import { seedDemo } from '../../../src/server/demo/seed.js';
import { replayControllerAudit } from '../../../src/services/governance/controller-audit.js';
import { gatherControllerInputs, WindowSamples } from '../../../src/services/governance/controller-inputs.js';
import { createTestDatabase, describeEachDialect, type TestDatabase } from '../../helpers/database.js';

const S = 1_800_000_000_000;
const END = S + 70_000;
const reading = (used: number) => ({ nominal: 16, used, borrowed: 0, lent: 16 - used > 8 ? 8 : 0 });

it('WindowSamples: readings hold until the next one; a reading at an unchanged clock replaces the last', () => {
  const w = new WindowSamples(S);
  w.add(S, new Map([['q', reading(4)]]));
  w.add(S, new Map([['q', reading(0)]]));
  w.add(S + 30_000, new Map([['q', reading(12)]]));
  expect(w.readingAt('q', S + 29_999)?.used).toBe(0);
  expect(w.readingAt('q', S + 30_000)?.used).toBe(12);
  expect(w.readingAt('q', S - 1)?.used).toBe(0);
  expect(w.means('q', END)?.used).toBeCloseTo((12 * 40_000) / 70_000, 5);
  expect(w.means('q', S + 30_000)?.used).toBe(0);
  expect(w.means('other', END)).toBeNull();
  const still = new WindowSamples(S);
  still.add(S, new Map([['q', reading(3)]]));
  expect(still.means('q', S)?.used).toBe(3);
});

it('replayControllerAudit recomputes an adjustment and flags a tampered one', () => {
  const elastic = BUILT_IN_POLICIES.find((p) => p.name === 'elastic')!;
  const input = {
    queue: 'q',
    tenant: 't',
    policy: 'elastic',
    nominalGpus: 16,
    usedGpus: 2,
    lentGpus: 0,
    borrowedGpus: 0,
    pendingGpus: 8,
    oldestWaitMs: 120_000,
    slaEligible: 1,
    slaMet: 0,
    utilization: null,
  };
  const [adj] = controllerStep(
    [input],
    new Map(),
    new Map([['elastic', elastic]]),
    DEFAULT_CONTROLLER_SETTINGS,
  );
  expect(adj).toMatchObject({ reasons: ['TIGHTEN_LENDING'], from: { lend: 1 }, to: { lend: 0.75 } });
  const record = {
    input: adj!.input,
    from: adj!.from,
    to: adj!.to,
    reasons: adj!.reasons,
    window: adj!.window,
    settings: DEFAULT_CONTROLLER_SETTINGS,
    policy: elastic,
  };
  const events = [
    { id: 'a', action: 'governance.controller.adjust', input: record },
    {
      id: 'b',
      action: 'governance.controller.adjust',
      input: { ...record, to: { lend: 0.5, borrow: null } },
    },
    { id: 'c', action: 'governance.controller.restore', input: {} },
  ];
  expect(
    replayControllerAudit(events as never).map((r) => [r.auditEventId, r.matches, r.recomputed.lend]),
  ).toEqual([
    ['a', true, 0.75],
    ['b', false, 0.75],
  ]);
});

describeEachDialect('controller inputs from job rows', (dialect) => {
  let db: TestDatabase;
  let orm: MikroORM;
  let queue: Queue;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    orm = await openDatabase({ database: db.database });
    await migrate(orm);
    await seedDemo(orm, fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-ctl-inputs-')));
    const em = scopedEntityManager(orm, { all: true });
    const tenant = await em.findOneOrFail(Tenant, { slug: 'aurora-research' });
    queue = await em.findOneOrFail(Queue, { tenant: tenant.id });
    const project = await em.findOneOrFail(Project, { tenant: tenant.id });
    const job = (
      name: string,
      gpus: number,
      submitTime: number,
      admission: { at: number; borrowed: boolean } | null,
      state: Job['state'] = admission ? 'RUNNING' : 'PENDING',
    ) => {
      const id = uuidv7();
      ids[name] = id;
      em.create(Job, {
        id,
        tenant,
        project,
        queue,
        submittedBy: null,
        name,
        priorityClass: 'training',
        podSets: [
          { name: 'main', count: 1, perPod: { gpu: gpus, cpu: 0, memory: 0 }, flavors: ['h100-80g'] },
        ],
        expectedDurationMs: null,
        maxRunMs: null,
        workload: null,
        state,
        admission: admission
          ? ({
              jobId: id,
              queue: queue.name,
              at: admission.at,
              podSets: [],
              borrowed: admission.borrowed,
              mode: 'fit',
            } as never)
          : null,
        idempotencyKey: null,
        requestHash: 'h'.repeat(64),
        submitTime,
        gpusRequested: gpus,
        preemptionCount: 0,
        meteredFrom: null,
        exitReason: null,
        submittedAt: new Date(submitTime),
        admittedAt: admission ? new Date(admission.at) : null,
        startedAt: null,
        finishedAt: null,
      });
    };
    job('met', 8, S + 1_000, { at: S + 5_000, borrowed: false });
    job('late', 8, S + 2_000, { at: S + 92_000, borrowed: false }, 'SUCCEEDED');
    job('borrowing', 4, S + 3_000, { at: S + 3_500, borrowed: true });
    job('unfitting', 8, S + 31_000, null);
    job('undecided', 2, S + 32_000, null);
    job('waited', 2, S + 1_500, null);
    job('before', 1, S - 10_000, null);
    job('cancelled', 2, S + 4_000, null, 'CANCELLED');
    await em.flush();
    for (const [at, u] of [
      [S + 10_000, 0.5],
      [S + 20_000, 0.7],
      [END + 10_000, 0.1],
    ] as const) {
      em.create(JobProbeSample, { job: ids.met!, tenant, at, gpuUtilization: u, memoryUtilization: null });
    }
    await em.flush();
  }, 60_000);
  afterAll(async () => {
    await orm?.close(true);
    await db?.dispose();
  });

  it('figures of the window: means, pending, SLA estimate, utilization', async () => {
    const samples = new WindowSamples(S);
    samples.add(S, new Map([[queue.name, reading(0)]]));
    samples.add(S + 30_000, new Map([[queue.name, reading(12)]]));
    const inCore = new Set(['unfitting', 'undecided', 'waited', 'before'].map((n) => ids[n]!));
    const [input] = await gatherControllerInputs(scopedEntityManager(orm, { all: true }), {
      queues: [{ id: queue.id, name: queue.name, tenantId: queue.tenant.id, policy: 'guaranteed' }],
      samples,
      endAt: END,
      slaMs: 60_000,
      pendingInCore: (id) => inCore.has(id),
    });
    expect(input).toMatchObject({
      queue: queue.name,
      tenant: queue.tenant.id,
      policy: 'guaranteed',
      nominalGpus: 16,
      borrowedGpus: 0,
      pendingGpus: 13,
      oldestWaitMs: 80_000,
    });
    expect(input!.usedGpus).toBeCloseTo((12 * 40_000) / 70_000, 5);
    expect(input!.lentGpus).toBeCloseTo((8 * 30_000) / 70_000, 5);
    // Eligible: met (admitted in 4 s), late (90 s), waited (pending 68.5 s). Not: borrowing, unfitting
    // (8 > 16 − 12 at its submit), undecided (pending 38 s), before (outside), cancelled.
    expect([input!.slaEligible, input!.slaMet]).toEqual([3, 1]);
    expect(input!.utilization).toBeCloseTo(0.6, 6);
  });
});
