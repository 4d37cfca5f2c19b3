import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InferenceService } from '../../../src/persistence/inference/index.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { inferenceAutoscalerTask } from '../../../src/services/inference/index.js';
import type { LeaderTaskContext } from '../../../src/services/scheduling/index.js';
import { startTestApp, type TestApp } from '../../helpers/harness.js';

const CREATE = `mutation($input: CreateInferenceServiceInput!) {
  createInferenceService(input: $input) { id name revision replicas { desired admitted ready pending minimum } }
}`;
const READ = `query($id: ID!) { inferenceService(id: $id) {
  id revision replicas { desired admitted ready pending minimum }
  replicaJobs { id state priorityClass replicaSlot borrowed }
  lastDecision { desired recommended reason whyNotMore signalValue }
  scalingEvents(first: 50) { edges { node { fromReplicas desired admitted reason } } }
  loadWindows { readings sla requests } sla usage { gpuHours }
} }`;

/** A service of Borealis on the demo's H100s: 2 GPUs a replica, traffic flat at `rps` (10 per replica). */
function serviceInput(over: Record<string, unknown> = {}, rps = 40) {
  return {
    name: 'chat',
    container: { image: 'registry.example/chat:1', args: ['--port', '8080'] },
    port: 8080,
    replica: { gpusPerPod: 2, flavors: ['h100-80g'] },
    minReplicas: 2,
    maxReplicas: 12,
    scaling: {
      signal: 'REQUESTS_PER_SECOND',
      target: 10,
      scaleDownStabilizationSeconds: 0,
      maxScaleUpStep: 12,
    },
    latencyObjectiveMs: 200,
    simulatedTraffic: { meanRps: rps, amplitude: 0, noise: 0, throughputPerReplica: 12, serviceP95Ms: 40 },
    ...over,
  };
}

describe.each(['sqlite', 'postgresql'] as const)('inference services (%s)', (dialect) => {
  let t: TestApp;
  let bob: string;
  let max: string;
  const read = async (id: string) => {
    const r = await t.gql(bob, READ, { id });
    if (!r.body.data) throw new Error(JSON.stringify(r.body.errors));
    return r.body.data.inferenceService;
  };
  const autoscale = () => t.app.scheduler.runLeaderTask('inference-autoscaler');

  beforeAll(async () => {
    if (dialect === 'postgresql' && !process.env.TEST_DATABASE_URL) {
      if (process.env.CI === 'true') throw new Error('TEST_DATABASE_URL is required under CI');
      return;
    }
    t = await startTestApp({ dialect, inference: { intervalMs: 3_600_000 } });
    bob = t.token('borealis-inference', 'MEMBER');
    max = t.token('aurora-research', 'MEMBER');
  });
  afterAll(async () => t?.close());

  it('starts its minimum as guaranteed replicas, scales on its signal, yields borrowed replicas to a lender and gets them back', async () => {
    if (!t) return;
    const created = await t.gql(bob, CREATE, { input: serviceInput({}, 120) });
    expect(created.body.errors).toBeUndefined();
    const id = created.body.data!.createInferenceService.id;
    expect(created.body.data!.createInferenceService.replicas.desired).toBe(2);
    await vi.waitFor(async () => expect((await read(id)).replicas.ready).toBe(2), { timeout: 10_000 });
    let s = await read(id);
    expect(s.replicaJobs.map((j: { priorityClass: string }) => j.priorityClass)).toEqual([
      'inference-critical',
      'inference-critical',
    ]);

    // 120 req/s at 10 a replica: 12 replicas; 24 GPUs, 8 of them borrowed from Aurora's idle nominal.
    t.now.value += 15_000;
    await autoscale();
    await vi.waitFor(async () => expect((await read(id)).replicas.ready).toBe(12), { timeout: 10_000 });
    s = await read(id);
    expect(s.replicas.desired).toBe(12);
    expect(s.lastDecision.reason).toMatch(/120 req\/s/);
    const classes = s.replicaJobs.map((j: { priorityClass: string }) => j.priorityClass);
    expect(classes.filter((c: string) => c === 'inference-critical')).toHaveLength(2);
    expect(s.replicaJobs.some((j: { borrowed: boolean }) => j.borrowed)).toBe(true);

    // Aurora takes its 16 GPUs back: the borrowing replicas go, the guaranteed ones stay.
    const submit = await t.gql(
      max,
      `mutation { submitJob(input: { name: "big", podSets: [{ count: 2, gpusPerPod: 8, flavors: ["h100-80g"] }], expectedDurationSeconds: 36000 }) { id } }`,
    );
    expect(submit.body.errors).toBeUndefined();
    const jobId = submit.body.data!.submitJob.id;
    await vi.waitFor(
      async () => {
        const r = await t.gql(max, `query($id: ID!) { node(id: $id) { ... on Job { state } } }`, {
          id: jobId,
        });
        expect(r.body.data!.node.state).toBe('RUNNING');
      },
      { timeout: 10_000 },
    );
    s = await read(id);
    const running = s.replicaJobs.filter((j: { state: string }) => j.state === 'RUNNING');
    expect(running).toHaveLength(8);
    expect(
      s.replicaJobs.filter(
        (j: { priorityClass: string; state: string }) =>
          j.priorityClass === 'inference-critical' && j.state === 'RUNNING',
      ),
    ).toHaveLength(2);
    t.now.value += 15_000;
    await autoscale();
    s = await read(id);
    expect(s.lastDecision.whyNotMore).toBeTruthy();
    expect(s.replicas).toMatchObject({ desired: 12, admitted: 8 });

    // The lender's job ends: the replicas come back without a new decision.
    await t.gql(max, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id: jobId });
    await vi.waitFor(async () => expect((await read(id)).replicas.ready).toBe(12), { timeout: 10_000 });

    // Traffic falls to 20 req/s: down to 2 (the step allows 2 at a time), highest slots first.
    await t.gql(
      bob,
      `mutation($id: ID!, $input: UpdateInferenceServiceInput!) { updateInferenceService(id: $id, input: $input) { revision } }`,
      {
        id,
        input: {
          simulatedTraffic: {
            meanRps: 20,
            amplitude: 0,
            noise: 0,
            throughputPerReplica: 12,
            serviceP95Ms: 40,
          },
        },
      },
    );
    t.now.value += 15_000;
    await autoscale();
    s = await read(id);
    expect(s.replicas.desired).toBe(10);
    expect(Math.max(...s.replicaJobs.map((j: { replicaSlot: number }) => j.replicaSlot))).toBe(9);
    const events = s.scalingEvents.edges.map((e: { node: { fromReplicas: number; desired: number } }) => [
      e.node.fromReplicas,
      e.node.desired,
    ]);
    expect(events).toContainEqual([2, 12]);
    expect(events).toContainEqual([12, 10]);
    expect(s.loadWindows[0].readings).toBeGreaterThan(0);
  });

  it('refuses bad input with BAD_USER_INPUT and writes nothing', async () => {
    if (!t) return;
    const before = await t.rowCounts({ ignoreAudit: true });
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ minReplicas: 5, maxReplicas: 2 }, /must not exceed maxReplicas/],
      [{ replica: { gpusPerPod: 0, flavors: ['h100-80g'] } }, /needs GPUs/],
      [{ scaling: { signal: 'IN_FLIGHT', target: -1 } }, /positive/],
      [
        { minReplicas: 1, scaling: { signal: 'IN_FLIGHT', target: 4, scaleToZeroAfterSeconds: 300 } },
        /minimum of 0/,
      ],
      [{ name: 'Not A Name' }, /lowercase/],
      [{ guaranteedClass: 'training' }, /never be preempted/],
    ];
    for (const [over, message] of cases) {
      const r = await t.gql(bob, CREATE, { input: serviceInput({ name: 'bad', ...over }) });
      expect(r.body.errors?.[0]?.extensions?.code, JSON.stringify(over)).toBe('BAD_USER_INPUT');
      expect(r.body.errors?.[0]?.message).toMatch(message);
    }
    expect(await t.rowCounts({ ignoreAudit: true })).toEqual(before);
  });

  it('shows another tenant nothing and refuses a viewer', async () => {
    if (!t) return;
    const created = await t.gql(bob, CREATE, {
      input: serviceInput({ name: 'private', minReplicas: 1, maxReplicas: 1 }),
    });
    const id = created.body.data!.createInferenceService.id;
    const outsider = await t.gql(max, READ, { id });
    expect(outsider.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const scale = await t.gql(
      max,
      `mutation($id: ID!) { scaleInferenceService(id: $id, maxReplicas: 3) { id } }`,
      { id },
    );
    expect(scale.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(JSON.stringify(outsider.body)).not.toMatch(/private|borealis/);
    // A viewer reads the tenant's services but may not create, scale or delete one.
    const viewed = await t.gql(max, CREATE, {
      input: serviceInput({
        name: 'viewed',
        minReplicas: 0,
        maxReplicas: 1,
        container: { image: 'nvcr.io/nvidia/tritonserver:24.05-py3' },
      }),
    });
    expect(viewed.body.errors).toBeUndefined();
    const viewedId = viewed.body.data!.createInferenceService.id;
    const viewer = t.token('aurora-research', 'VIEWER');
    expect((await t.gql(viewer, READ, { id: viewedId })).body.data?.inferenceService?.id).toBe(viewedId);
    const before = await t.rowCounts({ ignoreAudit: true });
    const refused = [
      await t.gql(viewer, CREATE, { input: serviceInput({ name: 'by-viewer' }) }),
      await t.gql(viewer, `mutation($id: ID!) { scaleInferenceService(id: $id, maxReplicas: 3) { id } }`, {
        id: viewedId,
      }),
      await t.gql(viewer, `mutation($id: ID!) { deleteInferenceService(id: $id) }`, { id: viewedId }),
    ];
    for (const r of refused) expect(r.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await t.rowCounts({ ignoreAudit: true })).toEqual(before);
    const del = await t.gql(bob, `mutation($id: ID!) { deleteInferenceService(id: $id) }`, { id });
    expect(del.body.errors).toBeUndefined();
    expect((await t.gql(bob, READ, { id })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('a run of the autoscaler decides every service, a page of ids at a time', async () => {
    if (!t) return;
    for (const name of ['paged-a', 'paged-b', 'paged-c']) {
      const r = await t.gql(bob, CREATE, { input: serviceInput({ name, minReplicas: 0, maxReplicas: 1 }) });
      expect(r.body.errors).toBeUndefined();
    }
    const em = systemEntityManager(t.app.orm);
    const all = (await em.find(InferenceService, {}, { fields: ['id'] })).map((s) => s.id).sort();
    expect(all.length).toBeGreaterThanOrEqual(3);
    // Each service's decision starts by reading it: recorded here, and answered "gone" so nothing is written.
    const decided: string[] = [];
    const probe = new Proxy(em, {
      get(target, prop, receiver) {
        if (prop === 'findOne')
          return async (_entity: unknown, where: { id: string }) => {
            decided.push(where.id);
            return null;
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    const task = inferenceAutoscalerTask(
      { intervalMs: 1000, backend: {}, scheduler: () => t.app.scheduler },
      2, // pages of two: three or more services take two pages or more
    );
    await task.run({ em: () => probe, ended: () => false, now: t.now.value } as unknown as LeaderTaskContext);
    expect(decided).toEqual(all);
  });
});
