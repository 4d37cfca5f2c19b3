// Through the real server: the demo's shape (4 × 8 H100, aurora and borealis with
// 16 nominal H100 each in one cohort, reclaimWithinCohort: Any). Borealis borrows 12 GPUs that
// leave 2 free on each of two nodes; aurora (0 in use) submits a 2 × 8 gang. Its quota is owed to
// it, so the GPUs must be reclaimed from the borealis jobs whose release frees two whole nodes —
// and previewJob must have predicted exactly that.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/harness.js';
import { waitFor } from '../../helpers/process.js';

let t: TestApp;
let aurora: Record<string, string>;
let borealis: Record<string, string>;

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { state pendingReason { code } } } }`;
const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible mode wouldPreempt { reason jobId } placement { node pods } } }`;
// Ten declared days: at the tests' time scale (1000) each job runs ~14 real minutes, far beyond the test.
const LONG = 864_000;

async function stateOf(token: string, id: string): Promise<string> {
  const res = await t.gql(token, JOB, { id });
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data!.node.state as string;
}

async function submit(
  token: string,
  queueId: string | undefined,
  name: string,
  podSet: Record<string, unknown>,
): Promise<string> {
  const res = await t.gql(token, SUBMIT, {
    in: { queueId, name, podSets: [{ flavors: ['h100-80g'], ...podSet }], expectedDurationSeconds: LONG },
  });
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data!.submitJob.id as string;
}

const running = (s: string) => s === 'ADMITTED' || s === 'RUNNING';

beforeAll(async () => {
  t = await startTestApp();
  aurora = await t.idsOf('aurora-research');
  borealis = await t.idsOf('borealis-inference');
});
afterAll(async () => {
  await t?.close();
});

describe('reclaim aware of placement (the demo)', () => {
  it("takes back aurora's owed GPUs from the borealis jobs whose release frees whole nodes, as previewJob predicted", async () => {
    const bob = t.token('borealis-inference', 'MEMBER');
    const max = t.token('aurora-research', 'MEMBER');
    // idsOf made a 1-GPU fixture job in each tenant: cancel them so the numbers are the demo's.
    // The tenant admins submitted them, so they cancel them (a contributor changes only their own jobs).
    for (const [slug, ids] of [
      ['aurora-research', aurora],
      ['borealis-inference', borealis],
    ] as const) {
      const cancelled = await t.gql(
        t.token(slug, 'TENANT_ADMIN'),
        `mutation($id: ID!) { cancelJob(id: $id) { id } }`,
        { id: ids.Job },
      );
      expect(cancelled.body.errors).toBeUndefined();
    }
    // x1 and x2 (6 GPUs each) land on two nodes first, leaving 2 free on each; w1..w4 (4 each)
    // fill the other two nodes. The most recently admitted jobs are on the full nodes.
    const xs = [
      await submit(bob, borealis.Queue, 'x1', { gpusPerPod: 6 }),
      await submit(bob, borealis.Queue, 'x2', { gpusPerPod: 6 }),
    ];
    await waitFor('x1, x2 admitted', async () =>
      (await Promise.all(xs.map((id) => stateOf(bob, id)))).every(running),
    );
    const ws: string[] = [];
    for (let i = 1; i <= 4; i++) ws.push(await submit(bob, borealis.Queue, `w${i}`, { gpusPerPod: 4 }));
    await waitFor('w1..w4 admitted', async () =>
      (await Promise.all(ws.map((id) => stateOf(bob, id)))).every(running),
    );
    const usage = await t.gql(
      t.token('borealis-inference', 'TENANT_ADMIN'),
      `query($id: ID!) { node(id: $id) { ... on Queue { usage { flavor resource used borrowed } } } }`,
      { id: borealis.Queue },
    );
    expect(usage.body.errors).toBeUndefined();
    expect(usage.body.data!.node.usage).toContainEqual({
      flavor: 'h100-80g',
      resource: 'GPU',
      used: 28,
      borrowed: 12,
    });

    const gang = {
      queueId: aurora.Queue,
      name: 'gang',
      podSets: [{ flavors: ['h100-80g'], gpusPerPod: 8, count: 2 }],
      expectedDurationSeconds: LONG,
    };
    const preview = await t.gql(max, PREVIEW, { in: gang });
    expect(preview.body.errors).toBeUndefined();
    const p = preview.body.data!.previewJob;
    expect(p.admissible).toBe(true);
    // Two victims (x1 and x2: 12 GPUs), both borealis' and so not named to aurora.
    expect(p.wouldPreempt).toEqual([
      { reason: 'reclaim', jobId: null },
      { reason: 'reclaim', jobId: null },
    ]);

    const res = await t.gql(max, SUBMIT, { in: gang });
    expect(res.body.errors).toBeUndefined();
    const gangId = res.body.data!.submitJob.id as string;
    await waitFor('the gang admitted', async () => running(await stateOf(max, gangId)));
    // Exactly the predicted victims went: x1 and x2 are pending again, the w jobs still run.
    await waitFor('x1, x2 preempted', async () =>
      (await Promise.all(xs.map((id) => stateOf(bob, id)))).every((s) => s === 'PENDING'),
    );
    expect((await Promise.all(ws.map((id) => stateOf(bob, id)))).every(running)).toBe(true);
    const placement = await t.gql(
      max,
      `query($id: ID!) { node(id: $id) { ... on Job { placement { node pods } } } }`,
      { id: gangId },
    );
    expect(placement.body.errors).toBeUndefined();
    expect(placement.body.data!.node.placement).toEqual(p.placement);
  });
});
