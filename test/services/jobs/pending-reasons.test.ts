import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobExplanation } from '../../../src/core/scheduling/types.js';
import {
  etaUnknownReasonOf,
  etaUnknownText,
  FOREIGN_JOB,
  renderPendingMessage,
} from '../../../src/services/jobs/pending-reasons.js';
import { startTestApp, type TestApp } from '../../helpers/harness.js';
import { liveSubscription, wsClient } from '../../helpers/live-subscription.js';

/**
 * The text of a pending reason is rendered from codes and numbers only: a referenced job
 * appears as the label the caller's rights give it, and no text of the core passes through.
 */
const base: JobExplanation = { jobId: 'j-1', queue: 'own-queue', state: 'pending', preemptions: 1 };
const OTHER = '01900000-0000-7000-8000-00000000abcd';
const hidden = () => FOREIGN_JOB;

describe('pending reason text', () => {
  it('a preemption names the preemptor only through the label (structured field of the core)', () => {
    const e: JobExplanation = {
      ...base,
      reason: 'WaitingForQuota',
      message: 'anything',
      preemptedBy: { jobId: OTHER, reason: 'reclaim' },
    };
    expect(renderPendingMessage(e, hidden)).toBe(
      'Preempted by a job of another tenant (reclaim); requeued with its original submit time. Waiting for quota.',
    );
    expect(renderPendingMessage(e, (id) => (id === OTHER ? 'job "mine"' : FOREIGN_JOB))).toContain(
      'Preempted by job "mine" (reclaim)',
    );
  });

  it('codes with numbers: quota shortfall, no node fits, StrictFIFO head', () => {
    const shortfall = {
      flavor: 'h100-80g',
      resource: 'gpu' as const,
      requested: 16,
      available: 4,
      nominal: 16,
      used: 12,
      borrowingLimit: 8,
      maxAvailable: 24,
    };
    expect(renderPendingMessage({ ...base, reason: 'WaitingForQuota', shortfall }, hidden)).toBe(
      'gpu on h100-80g: requested 16, available 4 (nominal 16, used 12, borrowing limit 8).',
    );
    expect(renderPendingMessage({ ...base, reason: 'ExceedsMaxQuota', shortfall }, hidden)).toContain(
      'exceeds the most the queue can ever get (24)',
    );
    const nodeFit = [
      { flavor: 'h100-80g', largestFreeGpusOnOneNode: 4, freeGpus: 12, podsNeeded: 2, gpusPerPod: 8 },
    ];
    expect(renderPendingMessage({ ...base, reason: 'NoNodeFits', nodeFit }, hidden)).toBe(
      'Quota allows it, but no set of free nodes fits its pods: h100-80g needs 2 pods × 8, the largest free block on one node is 4 (12 free in all).',
    );
    const blocked = renderPendingMessage(
      { ...base, reason: 'StrictFIFOBlocked', message: `waiting behind ${OTHER}`, blockedBy: OTHER },
      (id) => (id === OTHER ? 'job "head"' : FOREIGN_JOB),
    );
    expect(blocked).toBe(
      'Its StrictFIFO queue own-queue waits behind job "head", which cannot be admitted yet.',
    );
  });

  it('bounded tails: a reserved job and a job kept off reserved nodes are told so, with counts and instants but no node or job names', () => {
    const start = Date.UTC(2026, 11, 1, 18, 0);
    const held = renderPendingMessage(
      {
        ...base,
        reason: 'NoNodeFits',
        reservation: { flavor: 'h100-80g', nodes: ['gpu-node-7', 'gpu-node-9'], start },
      },
      hidden,
    );
    expect(held).toBe(
      'Quota allows it, but no set of free nodes fits its pods. It has waited long: 2 node(s) are reserved for it from 2026-12-01T18:00:00.000Z.',
    );
    const kept = renderPendingMessage(
      { ...base, reason: 'NoNodeFits', keptOffReserved: { nodes: 3, start } },
      hidden,
    );
    expect(kept).toContain(
      '3 node(s) with room for it are reserved from 2026-12-01T18:00:00.000Z for a job that has waited long',
    );
    expect(held + kept).not.toMatch(/gpu-node|01900000/);
  });

  it('an unknown code or a core message never reaches the text', () => {
    const text = renderPendingMessage(
      { ...base, reason: 'SomethingNew' as never, message: `secret ${OTHER}` },
      hidden,
    );
    expect(text).toBe('Waiting to be admitted.');
  });

  it('why there is no ETA: the code only while eta is null, and words for it', () => {
    expect(etaUnknownReasonOf({ ...base, eta: null, etaUnknownReason: 'NoDeclaredDuration' })).toBe(
      'NoDeclaredDuration',
    );
    expect(etaUnknownReasonOf({ ...base, eta: 1_000, etaUnknownReason: 'NoDeclaredDuration' })).toBeNull();
    expect(etaUnknownText('NoDeclaredDuration')).toMatch(/no declared duration/);
    expect(etaUnknownText(null)).toBeNull();
    expect(etaUnknownText('WindowClosed')).toMatch(/time window/);
  });
});

describe('pending reason text through the API', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it("a job preempted by one of its own tenant's jobs names that job to the tenant", async () => {
    const ids = await t.idsOf('aurora-research');
    const borealis = await t.idsOf('borealis-inference');
    const member = t.token('aurora-research', 'MEMBER');
    const submit = (bearer: string, queueId: string, name: string, priorityClass: string) =>
      t.gql(bearer, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
        in: {
          queueId,
          name,
          priorityClass,
          podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e6,
        },
      });
    // Each tenant fills its nominal 16 H100s, so none is free; a production job of Aurora then
    // preempts one of Aurora's own experiments (priority, within its nominal quota).
    for (let i = 1; i <= 2; i++)
      await submit(t.token('borealis-inference', 'MEMBER'), borealis.Queue!, `serving-${i}`, 'training');
    const experiments: string[] = [];
    for (let i = 1; i <= 2; i++)
      experiments.push(
        (await submit(member, ids.Queue!, `experiment-${i}`, 'experiment')).body.data!.submitJob.id,
      );
    const client = wsClient(t.url, member);
    const streams = experiments.map((id) =>
      liveSubscription(
        client,
        `subscription($id: ID!) { jobPosition(id: $id) { state job { preemptionCount } pendingReason { message } } }`,
        { id },
        (d) => d.jobPosition,
      ),
    );
    try {
      const deadline = Date.now() + 40_000;
      const admitted = async () => {
        const states = await Promise.all(
          experiments.map((id) =>
            t.gql(member, `query($id: ID!) { node(id: $id) { ... on Job { state } } }`, { id }),
          ),
        );
        return states.every((s) => ['ADMITTED', 'RUNNING'].includes(s.body.data?.node?.state));
      };
      while (!(await admitted()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      // production, not inference-critical: that class needs a grant Aurora does not hold in the demo.
      const urgent = await submit(member, ids.Queue!, 'urgent-serving', 'production');
      expect(urgent.body.errors, JSON.stringify(urgent.body)).toBeUndefined();
      const preemptedMessage = () =>
        streams.flatMap((s) => s.values).find((v) => v.state === 'PENDING' && v.job.preemptionCount > 0)
          ?.pendingReason?.message;
      while (!preemptedMessage() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(preemptedMessage()).toMatch(/^Preempted by job "urgent-serving" \(priority\)/);
    } finally {
      for (const s of streams) s.dispose();
      await client.dispose();
    }
  }, 60_000);

  it("previewJob says why a job would wait in the same words as a pending job's reason", async () => {
    const ids = await t.idsOf('aurora-research');
    // 24 H100s: more than the queue can ever get (its nominal plus what it may borrow).
    const res = await t.gql(
      t.token('aurora-research', 'MEMBER'),
      `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible reason message } }`,
      {
        in: {
          queueId: ids.Queue!,
          name: 'too-big',
          podSets: [{ count: 3, gpusPerPod: 8, flavors: ['h100-80g'] }],
        },
      },
    );
    expect(res.body.errors).toBeUndefined();
    const preview = res.body.data!.previewJob;
    expect(preview.admissible).toBe(false);
    // The renderer's words (the core's own text has no final period and is never shown).
    expect(preview.reason).toBe('ExceedsMaxQuota');
    expect(preview.message).toMatch(
      /^gpu on h100-80g: requested 24 exceeds the most the queue can ever get \(\d+\)\.$/,
    );
  });
});
