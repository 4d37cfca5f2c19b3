// Through the API: an inference-critical job (never preempted) runs only within its queue's nominal
// (core quota-mode.ts, nominalOnly), so it never holds the other tenant's idle share; its pending
// reason and previewJob say why, with the numbers.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../../helpers/database.js';
import { startTestApp, type TestApp } from '../../helpers/harness.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible borrowed reason message } }`;
const PENDING = `query($id: ID!) { node(id: $id) { ... on Job { state pendingReason { code message requested available nominal borrowingLimit used } } } }`;

describeEachDialect('a job that is never preempted does not borrow (API)', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ dialect });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("borealis' 24-GPU inference-critical job waits with the reason (its nominal is 16), aurora's floor stays free; within the nominal it runs", async () => {
    const borealis = await t.idsOf('borealis-inference');
    const aurora = await t.idsOf('aurora-research');
    const bob = t.token('borealis-inference', 'MEMBER');
    const input = (queueId: string, name: string, priorityClass: string, count: number) => ({
      in: { queueId, name, priorityClass, podSets: [{ count, gpusPerPod: 8, flavors: ['h100-80g'] }] },
    });
    const stateOf = async (bearer: string, id: string) =>
      (await t.gql(bearer, PENDING, { id })).body.data!.node;
    const until = async (check: () => Promise<boolean>) => {
      const deadline = Date.now() + 20_000;
      while (!(await check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    };

    // A training job of the same size would borrow aurora's idle half; the inference-critical one may not.
    const training = await t.gql(bob, PREVIEW, input(borealis.Queue!, 'batch-24', 'training', 3));
    expect(training.body.data!.previewJob).toMatchObject({ admissible: true, borrowed: true });
    const preview = await t.gql(bob, PREVIEW, input(borealis.Queue!, 'serve-24', 'inference-critical', 3));
    expect(preview.body.errors, JSON.stringify(preview.body)).toBeUndefined();
    const WHY =
      "gpu on h100-80g: requested 24 exceeds the most the queue can ever get (16). Its priority class is never preempted, so it runs only within its queue's nominal quota and never borrows.";
    expect(preview.body.data!.previewJob).toEqual({
      admissible: false,
      borrowed: false,
      reason: 'ExceedsMaxQuota',
      message: WHY,
    });

    const big = await t.gql(bob, SUBMIT, input(borealis.Queue!, 'serve-24', 'inference-critical', 3));
    expect(big.body.errors, JSON.stringify(big.body)).toBeUndefined();
    const bigId = big.body.data!.submitJob.id as string;
    await until(async () => (await stateOf(bob, bigId)).pendingReason?.code === 'ExceedsMaxQuota');
    const pending = await stateOf(bob, bigId);
    expect(pending).toMatchObject({
      state: 'PENDING',
      pendingReason: { code: 'ExceedsMaxQuota', message: WHY, requested: 24, nominal: 16, borrowingLimit: 0 },
    });
    // What it may use is the nominal less what the queue's never-preempted jobs hold (none here: the demo's
    // jobs in it are preemptible and would make room), never the cohort's idle half.
    expect(pending.pendingReason.available).toBe(16);

    // Aurora's nominal is there for it at once.
    const amy = t.token('aurora-research', 'MEMBER');
    const a16 = await t.gql(amy, SUBMIT, input(aurora.Queue!, 'train-16', 'training', 2));
    const a16Id = a16.body.data!.submitJob.id as string;
    await until(async () => ['ADMITTED', 'RUNNING'].includes((await stateOf(amy, a16Id)).state));
    expect(['ADMITTED', 'RUNNING']).toContain((await stateOf(amy, a16Id)).state);

    // Within its nominal the inference-critical job runs.
    const fits = await t.gql(bob, SUBMIT, input(borealis.Queue!, 'serve-16', 'inference-critical', 2));
    const fitsId = fits.body.data!.submitJob.id as string;
    await until(async () => ['ADMITTED', 'RUNNING'].includes((await stateOf(bob, fitsId)).state));
    expect(['ADMITTED', 'RUNNING']).toContain((await stateOf(bob, fitsId)).state);
  }, 40_000);
});
