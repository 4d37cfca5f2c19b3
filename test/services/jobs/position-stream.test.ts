import type { Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobExplanation } from '../../../src/core/scheduling/types.js';
import { createEventBus } from '../../../src/events/bus.js';
import { jobPositionStream } from '../../../src/services/jobs/position-hub.js';
import type { JobPosition } from '../../../src/services/jobs/position-stream.js';
import { makeCluster, makeJob, makeQueue, nodes } from '../../core/builders.js';
import { startTestApp, type TestApp } from '../../helpers/harness.js';
import { eventually, liveSubscription, wsClient } from '../../helpers/live-subscription.js';

/**
 * jobPosition is quiet and ordered: one update per scheduling cycle that changed the job's
 * position, ETA or reason, showing the state at the end of that cycle (never the moment
 * between a submit and the cycle that admits it), plus one per state change. Real server,
 * graphql-ws over a real socket.
 */
let t: TestApp;
let aurora: Record<string, string>;
let admin: string;
let client: Client;

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const CANCEL = `mutation($id: ID!) { cancelJob(id: $id) { state } }`;
const STATE = `query($id: ID!) { node(id: $id) { ... on Job { state pendingReason { code } } } }`;
const POSITION = `subscription($id: ID!) {
  jobPosition(id: $id) {
    state
    position { inQueue queueLength inCohort cohortLength }
    eta
    pendingReason { code message requested available used nominal borrowingLimit }
  }
}`;

interface Update {
  state: string;
  position: {
    inQueue: number | null;
    queueLength: number | null;
    inCohort: number | null;
    cohortLength: number | null;
  } | null;
  eta: string | null;
  pendingReason: { code: string; message: string } | null;
}

/** What the test compares between the stream and the scheduler's end-of-cycle states. */
const fromUpdate = (u: Update) =>
  JSON.stringify([
    u.position?.inQueue,
    u.position?.queueLength,
    u.position?.inCohort,
    u.position?.cohortLength,
    u.eta,
    u.pendingReason?.code,
  ]);
const fromExplanation = (e: JobExplanation) =>
  JSON.stringify([
    e.positionInQueue ?? null,
    e.queuePending ?? null,
    e.positionInCohort ?? null,
    e.cohortPending ?? null,
    e.eta == null ? null : new Date(e.eta).toISOString(),
    e.reason ?? 'NotYetEvaluated',
  ]);
/** Everything a subscriber can be shown of an explanation (the core's bookkeeping left out). */
const visible = ({
  jobId: _j,
  queue: _q,
  state: _s,
  admission: _a,
  expectedEnd: _e,
  ...rest
}: JobExplanation) => JSON.stringify(rest);
const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;
const withoutRepeats = (values: string[]) => values.filter((v, i) => i === 0 || v !== values[i - 1]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function submit(input: Record<string, unknown>): Promise<string> {
  const res = await t.gql(admin, SUBMIT, { in: { queueId: aurora.Queue, ...input } });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.submitJob.id;
}
const cancel = async (id: string) => expect((await t.gql(admin, CANCEL, { id })).body.errors).toBeUndefined();
const stateOf = async (id: string): Promise<{ state: string; pendingReason: { code: string } | null }> =>
  (await t.gql(admin, STATE, { id })).body.data!.node;

beforeAll(async () => {
  t = await startTestApp();
  aurora = await t.idsOf('aurora-research');
  admin = t.token('aurora-research', 'TENANT_ADMIN');
  await cancel(aurora.Job!); // idsOf's fixture job: the cluster is ours
  client = wsClient(t.url, admin);
});
afterAll(async () => {
  await client?.dispose();
  await t?.close();
});

describe('jobPosition: once per cycle that changed something, from the end of the cycle', () => {
  it('jobs submitted ahead, finishing and cancelled: exactly the end-of-cycle values, no flip-flop, no repeats, no more updates than changes', async () => {
    // P needs more than the queue can ever get: it stays pending, first in its queue.
    const never = {
      podSets: [{ count: 5, gpusPerPod: 8, flavors: ['h100-80g'] }],
      expectedDurationSeconds: 600,
    };
    const p = await submit({ name: 'P', ...never });
    await eventually(async () => (await stateOf(p)).pendingReason?.code === 'ExceedsMaxQuota');

    // The scheduler's state at the end of every cycle (and rebuild or finish), sampled the way a subscriber
    // may see it.
    const endOfCycle: JobExplanation[] = [];
    const record = () => {
      const explanation = t.app.scheduler.explain(rawId(p));
      if (explanation?.state === 'pending') endOfCycle.push(explanation);
    };
    record();
    const stopRecording = t.app.scheduler.onStateChange(record);

    const sub = liveSubscription<Update>(client, POSITION, { id: p }, (data) => data.jobPosition);
    await sub.until((values) => values.length === 1);
    expect(sub.values[0]!.position).toMatchObject({ inQueue: 1, queueLength: 1 });

    // H: higher priority, never fits either: ahead of P from its first cycle on.
    const h = await submit({ name: 'H', priorityClass: 'production', ...never });
    await sub.until((values) => values.at(-1)?.position?.inQueue === 2);

    // Small production jobs rank ahead of P from the moment they are submitted until the
    // cycle that admits them: between the two P is 3rd of 3, a state no cycle ends in.
    for (let round = 0; round < 4; round++) {
      const finishes = await submit({
        name: `quick ${round}`,
        priorityClass: 'production',
        podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 20,
      });
      await eventually(async () => (await stateOf(finishes)).state === 'SUCCEEDED');
      const cancelled = await submit({
        name: `cancelled ${round}`,
        priorityClass: 'production',
        podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 86_400,
      });
      await eventually(async () => (await stateOf(cancelled)).state === 'RUNNING');
      await cancel(cancelled);
    }
    await cancel(h);
    await sub.until((values) => values.at(-1)?.position?.inQueue === 1 && values.length > 2);
    // Let the last cycles' updates, if any, arrive before P leaves.
    await sleep(300);
    await cancel(p);
    await sub.until((values) => values.at(-1)?.state === 'CANCELLED');
    stopRecording();
    sub.dispose();

    const received = sub.values;
    const pending = received.filter((u) => u.state === 'PENDING');
    const context = JSON.stringify({ received, endOfCycle: withoutRepeats(endOfCycle.map(fromExplanation)) });

    // No two consecutive updates alike.
    for (let i = 1; i < received.length; i++)
      expect(received[i], `update ${i} repeats update ${i - 1}: ${context}`).not.toEqual(received[i - 1]);

    // Never the moment between a submit and its cycle: P was never 3rd, its queue never 3 long.
    expect(
      pending.every((u) => u.position!.inQueue! <= 2 && u.position!.queueLength! <= 2),
      context,
    ).toBe(true);
    expect(withoutRepeats(pending.map((u) => String(u.position!.inQueue)))).toEqual(['1', '2', '1']);

    // Every pending value is an end-of-cycle state, in the order the cycles produced them.
    const cycleValues = endOfCycle.map(fromExplanation);
    let from = 0;
    for (const update of pending) {
      const at = cycleValues.indexOf(fromUpdate(update), from);
      expect(
        at,
        `not an end-of-cycle state (or out of order): ${fromUpdate(update)}; ${context}`,
      ).toBeGreaterThanOrEqual(0);
      from = at;
    }

    // At most one update per cycle that changed what a subscriber sees (plus the first value), and one per
    // state change.
    const changes = withoutRepeats(endOfCycle.map(visible)).length - 1;
    expect(pending.length, context).toBeLessThanOrEqual(1 + changes);
    expect(received.length - pending.length).toBe(1);
    expect(received.at(-1)).toMatchObject({ state: 'CANCELLED', position: null, pendingReason: null });
  });
});

describe('jobPositionStream with the real core and event bus', () => {
  it('a job admitted and preempted before its job-updated events arrive shows PENDING with the explanation of the cycle that preempted it', async () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [makeQueue('a').nominal('h100', 8).withinQueue('LowerPriority')],
    });
    const listeners = new Set<() => void>();
    const scheduler = {
      explain: (id: string) => {
        try {
          return s.explain(id);
        } catch {
          return null;
        }
      },
      onStateChange: (listener: () => void) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    /** A cycle as the scheduler service runs it: the listeners hear of it at its end. */
    const cycle = () => {
      s.cycle();
      for (const listener of listeners) listener();
    };
    const events = createEventBus();
    s.submit(makeJob('victim').queue('a').pods(8).priority('experiment').build());
    const stream = jobPositionStream({ scheduler, events }, { id: 'victim', state: 'PENDING' });
    expect((await stream.next()).value).toMatchObject({ state: 'PENDING' });

    cycle(); // admits the victim
    s.submit(makeJob('urgent').queue('a').pods(8).priority('training').build());
    cycle(); // preempts it
    expect(scheduler.explain('victim')).toMatchObject({ state: 'pending', preemptions: 1 });
    // The outbox publishes after the cycles: the job's state changes arrive late, in a burst.
    for (const state of ['ADMITTED', 'RUNNING', 'PENDING'] as const)
      events.publish('job-updated', 'victim', { jobId: 'victim', state, at: 0 });
    await sleep(50);
    const read: JobPosition[] = [];
    while (read.at(-1)?.state !== 'PENDING') read.push((await stream.next()).value as JobPosition);
    expect(read.at(-1)!.explanation, JSON.stringify(read)).toMatchObject({
      state: 'pending',
      preemptions: 1,
    });
    await stream.return!();
    expect(listeners.size).toBe(0);
  });
});
