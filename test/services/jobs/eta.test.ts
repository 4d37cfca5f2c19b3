// Through the real server: a pending job's ETA counts the jobs ahead of it in
// admission order with their declared durations, in the backend's clock (the tests' simulated
// cluster runs at time scale 1000, so a declared 10 days is 864 s), and is null with a reason
// when a job ahead has no declared duration — never a guess.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/harness.js';
import { waitFor } from '../../helpers/process.js';

let t: TestApp;
let aurora: Record<string, string>;
let borealis: Record<string, string>;

const SCALE = 1000; // testConfig's simulatedTimeScale
const TEN_DAYS_S = 864_000;
const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { state admittedAt eta pendingReason { code etaUnknownReason etaUnknownMessage } } } }`;

async function job(token: string, id: string) {
  const res = await t.gql(token, JOB, { id });
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data!.node as {
    state: string;
    admittedAt: string | null;
    eta: string | null;
    pendingReason: { code: string; etaUnknownReason: string | null; etaUnknownMessage: string | null } | null;
  };
}

async function submit(
  token: string,
  queueId: string,
  name: string,
  gpus: number,
  durationS: number | null,
): Promise<string> {
  const podSets = [{ flavors: ['h100-80g'], gpusPerPod: 8, count: gpus / 8 }];
  const res = await t.gql(token, SUBMIT, {
    in: { queueId, name, podSets, ...(durationS === null ? {} : { expectedDurationSeconds: durationS }) },
  });
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data!.submitJob.id as string;
}

beforeAll(async () => {
  t = await startTestApp();
  aurora = await t.idsOf('aurora-research');
  borealis = await t.idsOf('borealis-inference');
});
afterAll(async () => {
  await t?.close();
});

describe('ETA through the graph', () => {
  it('counts the jobs ahead with their declared durations, in the backend clock; unknown is null with a reason', async () => {
    const max = t.token('aurora-research', 'MEMBER');
    const bob = t.token('borealis-inference', 'MEMBER');
    for (const [token, ids] of [
      [max, aurora],
      [bob, borealis],
    ] as const) {
      await t.gql(token, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id: ids.Job });
    }
    // Borealis holds its own 16 H100 (nothing left to borrow); aurora runs 16 for 10 declared days.
    const held = await submit(bob, borealis.Queue!, 'held', 16, 2 * TEN_DAYS_S);
    const first = await submit(max, aurora.Queue!, 'first', 16, TEN_DAYS_S);
    await waitFor('both running', async () =>
      (await Promise.all([job(bob, held), job(max, first)])).every((j) => j.state !== 'PENDING'),
    );
    const second = await submit(max, aurora.Queue!, 'second', 16, TEN_DAYS_S);
    const third = await submit(max, aurora.Queue!, 'third', 16, TEN_DAYS_S);
    await waitFor('both evaluated', async () =>
      (await Promise.all([job(max, second), job(max, third)])).every(
        (j) => j.pendingReason?.code !== 'NotYetEvaluated',
      ),
    );

    const admittedAt = Date.parse((await job(max, first)).admittedAt!);
    const step = (TEN_DAYS_S * 1000) / SCALE; // 864 s on the simulated cluster
    const s = await job(max, second);
    const th = await job(max, third);
    // `second` starts when `first` ends; `third` when `second` would end — not the same ETA.
    expect(Date.parse(s.eta!) - admittedAt).toBe(step);
    expect(Date.parse(th.eta!) - admittedAt).toBe(2 * step);
    expect(s.pendingReason!.etaUnknownReason).toBeNull();

    // A job ahead without a declared duration makes the ETA of the jobs behind it unknowable.
    const openEnded = await submit(max, aurora.Queue!, 'open-ended', 16, null);
    const fourth = await submit(max, aurora.Queue!, 'fourth', 16, TEN_DAYS_S);
    await waitFor(
      'fourth evaluated',
      async () => (await job(max, fourth)).pendingReason?.code !== 'NotYetEvaluated',
    );
    const f = await job(max, fourth);
    expect(f.eta).toBeNull();
    expect(f.pendingReason!.etaUnknownReason).toBe('NoDeclaredDuration');
    expect(f.pendingReason!.etaUnknownMessage).toBeTruthy();
    // The jobs ahead of the open-ended one keep their ETAs.
    expect(Date.parse((await job(max, second)).eta!) - admittedAt).toBe(step);
    expect((await job(max, openEnded)).eta).not.toBeNull();
  });
});
