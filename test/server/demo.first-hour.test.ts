// First hour: the README's example training job, submitted to a demo that has been
// busy for a while, starts at once (and is not preempted by the demo's background jobs), and a
// job that has to wait says why, where it stands and when it should start.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { load } from '../../src/config/index.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo, seedDemoBudgets } from '../../src/server/demo/seed.js';
import { startDemoTrickle } from '../../src/server/demo/trickle.js';
import { Prng } from '../../src/simulator/prng.js';
import { liveSubscription, wsClient } from '../helpers/live-subscription.js';
import { postGraphql } from '../helpers/scheduler-app.js';

/** The README's "Jobs" example, word for word (Using it → Jobs); keep the two in step. */
const README_EXAMPLE_JOB = (idempotencyKey: string) => `mutation {
  submitJob(input: {
    # projectId: "<Project id>"      # default: the tenant's default project
    # queueId: "<Queue id>"          # default: the project's default queue
    name: "llama-ft-7b"
    priorityClass: "training"        # production | training | experiment; inference-critical needs a grant
    podSets: [{ count: 2, gpusPerPod: 8, cpuMillisPerPod: 64000, memoryMiBPerPod: 262144, flavors: ["h100-80g"] }]
    expectedDurationSeconds: 7200
    idempotencyKey: "${idempotencyKey}"
    container: {                     # checked against the tenant's and project's data boundaries
      image: "nvcr.io/nvidia/pytorch:24.01-py3", command: ["torchrun", "train.py"]
      env: [{ name: "EPOCHS", value: "3" }]                      # values never reach the audit log
      datasets: [{ location: "s3://aurora-datasets/llama", mountPath: "/data" }]
      artifactStore: "s3://aurora-models/llama-ft"
    }
  }) {
    id state
    position { inQueue queueLength }   # null once admitted
    eta                                # when it should start, in the cluster's clock
    pendingReason { code message }     # why it waits, with the numbers
  }
}`;

interface Submitted {
  id: string;
  state: string;
  position: { inQueue: number; queueLength: number } | null;
  eta: string | null;
  pendingReason: { code: string; message: string } | null;
}

let app: FairwayApp;
let config: ReturnType<typeof load>;
let url: string;
let credentials: DemoCredential[];
let stopTrickle: () => void;
let dataDir: string;
const token = (email: string) => credentials.find((c) => c.email === email)!.token;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-first-hour-'));
  // As `npm start` runs it: the development defaults, the demo and its trickle on, the demo's
  // time scale (60×: the example's two declared hours run two real minutes).
  config = load({
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    FAIRWAY_DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
    FAIRWAY_SIM_TIME_SCALE: '60',
  });
  expect(config.demo.enabled && config.demo.trickle).toBe(true);
  app = await buildApp({ config });
  credentials = (await seedDemo(app.orm, dataDir))!;
  await seedDemoBudgets(app.orm);
  await app.scheduler.rebuild();
  ({ url } = await app.listen(0, '127.0.0.1'));
  // The trickle as main.ts starts it, only faster (and seeded), so the demo is as busy within a
  // second as it is after a few minutes of `npm start`.
  const prng = new Prng(13);
  stopTrickle = startDemoTrickle(app, { everyMs: 20, random: () => prng.next() });
}, 30_000);

afterAll(async () => {
  stopTrickle?.();
  await app?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe("the README's example job in a busy demo", () => {
  it('starts within seconds, is not preempted by background jobs, and a second one says why it waits', async () => {
    const ada = token('ada@aurora.example');
    const max = token('max@aurora.example');
    const queues = await postGraphql<{ data: { tenant: { queues: { id: string; name: string }[] } } }>(
      url,
      ada,
      '{ tenant(slug: "aurora-research") { queues { id name } } }',
    );
    const queueId = queues.data.tenant.queues.find((q) => q.name === 'aurora-training')!.id;

    // Busy as after minutes of the demo: background jobs hold most of Aurora's 16 H100s (the
    // example needs all 16). Subscribed first, then read: an admission in between is at worst
    // waited for until the next one (queueUpdated fires on admissions and finishes, not submits).
    type QueueState = { pendingCount: number; usage: { flavor: string; used: number }[] };
    const busy = (v: QueueState) => (v.usage.find((u) => u.flavor === 'h100-80g')?.used ?? 0) >= 12;
    const client = wsClient(url, ada);
    const updates = liveSubscription(
      client,
      'subscription($q: ID!) { queueUpdated(id: $q) { pendingCount usage { flavor used } } }',
      { q: queueId },
      (d) => d.queueUpdated as QueueState,
    );
    const read = async () =>
      (
        await postGraphql<{ data: { tenant: { queues: (QueueState & { id: string })[] } } }>(
          url,
          ada,
          '{ tenant(slug: "aurora-research") { queues { id pendingCount usage { flavor used } } } }',
        )
      ).data.tenant.queues.find((q) => q.id === queueId)!;
    const initial = await read();
    if (!busy(initial)) await updates.until((vs) => vs.some(busy), 15_000);
    updates.dispose();
    // Busy, with background jobs waiting too: read until both hold at once (between two reads a
    // background job may finish and the next be admitted, leaving none pending for a moment).
    let background = await read();
    for (let deadline = Date.now() + 15_000; !(busy(background) && background.pendingCount > 0); ) {
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 50));
      background = await read();
    }
    expect(background.pendingCount).toBeGreaterThan(0);
    const submittedAt = Date.now();
    const first = await postGraphql<{ data?: { submitJob: Submitted }; errors?: unknown[] }>(
      url,
      max,
      README_EXAMPLE_JOB('ci-run-1234'),
    );
    expect(first.errors).toBeUndefined();
    const firstId = first.data!.submitJob.id;

    const maxClient = wsClient(url, max);
    const position = liveSubscription(
      maxClient,
      'subscription($id: ID!) { jobPosition(id: $id) { state } }',
      { id: firstId },
      (d) => (d.jobPosition as { state: string }).state,
    );
    await position.until((states) => states.some((s) => s === 'RUNNING' || s === 'ADMITTED'), 10_000);
    const waitedMs = Date.now() - submittedAt;
    position.dispose();
    expect(waitedMs).toBeLessThan(10_000);

    // The same example again: Aurora's 16 H100s are the first one's now, so it waits. The submit
    // answers before the scheduler's next cycle has looked at it; `jobPosition` (current value
    // first, then per cycle) then says why (quota, with the numbers), where it stands and when.
    const second = await postGraphql<{ data?: { submitJob: Submitted }; errors?: unknown[] }>(
      url,
      max,
      README_EXAMPLE_JOB('ci-run-1235'),
    );
    expect(second.errors).toBeUndefined();
    expect(second.data!.submitJob.state).toBe('PENDING');
    expect(['NotYetEvaluated', 'WaitingForQuota']).toContain(second.data!.submitJob.pendingReason?.code);
    const explained = liveSubscription(
      maxClient,
      'subscription($id: ID!) { jobPosition(id: $id) { state position { inQueue queueLength } eta pendingReason { code message } } }',
      { id: second.data!.submitJob.id },
      (d) => d.jobPosition as Submitted,
    );
    const [waiting] = (
      await explained.until((vs) => vs.some((v) => v.pendingReason?.code !== 'NotYetEvaluated'), 10_000)
    ).filter((v) => v.pendingReason?.code !== 'NotYetEvaluated');
    explained.dispose();
    expect(waiting!.state).toBe('PENDING');
    expect(waiting!.pendingReason?.code).toBe('WaitingForQuota');
    expect(waiting!.pendingReason?.message).toMatch(/h100-80g: requested 16, available \d+ \(nominal 16/);
    expect(waiting!.position).toEqual({ inQueue: 1, queueLength: expect.any(Number) });
    // Behind the first job's declared two hours: two real minutes at 60×.
    const etaMs = Date.parse(waiting!.eta!) - Date.now();
    expect(etaMs).toBeGreaterThan(0);
    expect(etaMs).toBeLessThan(((7200 * 1000) / config.backend.simulatedTimeScale) * 1.5);

    // Background jobs kept coming meanwhile; none of them took the first job's GPUs.
    const after = await postGraphql<{
      data: { node: { state: string; events: { edges: { node: { type: string } }[] } } };
    }>(
      url,
      max,
      'query($id: ID!) { node(id: $id) { ... on Job { state events { edges { node { type } } } } } }',
      { id: firstId },
    );
    expect(after.data.node.state).toBe('RUNNING');
    expect(after.data.node.events.edges.map((e) => e.node.type)).not.toContain('PREEMPTED');
    await Promise.all([client.dispose(), maxClient.dispose()]);
  }, 30_000);
});
