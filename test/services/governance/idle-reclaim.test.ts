// Idle reclaim: a running job whose GPU utilization stays under its queue's policy
// threshold for the policy's idle time is flagged, and the policy decides — notify (it keeps
// running), reclaim while its queue borrows, or reclaim (back to pending, held for the idle time).
// The owner sees Job.governanceFlag, a FLAGGED job event, a JOB_FLAGGED tenant event and, on
// reclaim, a PREEMPTED event with the numbers; the other tenant sees none of it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { describeEachDialect } from '../../helpers/database.js';
import {
  type BothTenantsListening,
  enc,
  type FlagTenantEvent,
  type IdleApp,
  listenToBothTenants,
  MIN,
  startIdleApp,
  TIME_SCALE,
  until,
} from '../../helpers/idle-reclaim-app.js';
import type { LiveSubscription } from '../../helpers/live-subscription.js';

const JOB = `query($id: ID!) { node(id: $id) { ... on Job { state governanceFlag { kind since at forSeconds meanUtilization utilizationBelow limitSeconds action decision policy } events { edges { node { type reason message } } } pendingReason { code message } } } }`;
/** The idle time of the test policies and of 'elastic' (30 declared minutes) in the backend's clock. */
const IDLE_MS = (30 * MIN) / TIME_SCALE;

type TenantEvent = FlagTenantEvent;

describeEachDialect('idle reclaim', (dialect) => {
  let t: IdleApp;
  let aurora: LiveSubscription<TenantEvent>;
  let borealis: LiveSubscription<TenantEvent>;
  let listening: BothTenantsListening | undefined;

  beforeAll(async () => {
    t = await startIdleApp(dialect);
    await t.policy('idle-notify', 'NOTIFY');
    await t.policy('idle-reclaim', 'RECLAIM');
    listening = await listenToBothTenants(t, 'TENANT_ADMIN');
    ({ aurora, borealis } = listening);
  }, 30_000);
  afterAll(async () => {
    await listening?.dispose();
    await t?.close();
  });

  const read = async (slug: string, jobId: string) => {
    const res = await t.gql(t.token(slug, 'TENANT_ADMIN'), JOB, { id: enc('Job', jobId) });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    return res.data.node;
  };
  /** Low samples from just after the start until now, one every idle/5, then the clock moves past the idle
   * time.
   */
  const idleFor = async (jobId: string, startedAt: number, utilization = 0.03) => {
    const readings: [number, number][] = [];
    for (let at = startedAt + 10; at <= startedAt + 10 + IDLE_MS + 100; at += IDLE_MS / 5)
      readings.push([at, utilization]);
    await t.samples(jobId, readings);
    t.now.value = Math.max(t.now.value, startedAt + 10 + IDLE_MS + 150);
  };
  const ofJob = (events: TenantEvent[], jobId: string) => events.filter((e) => e.jobId === enc('Job', jobId));

  it('NOTIFY: an idle job is flagged with its numbers and keeps running; utilization coming back clears the flag', async () => {
    await t.govern('aurora-research', { isolationPolicy: 'idle-notify' });
    const id = await t.submit('aurora-research', 'idle-notebook', 8);
    const running = await t.waitState(id, ['RUNNING']);
    await idleFor(id, running.startedAt!.getTime());

    const flagged = await aurora
      .until((v) => ofJob(v, id).some((e) => e.kind === 'JOB_FLAGGED'))
      .then((v) => ofJob(v, id).find((e) => e.kind === 'JOB_FLAGGED'));
    expect(flagged!.flag).toMatchObject({
      kind: 'IDLE',
      decision: 'NOTIFY',
      action: 'NOTIFY',
      limitSeconds: 1800,
      utilizationBelow: 0.1,
      policy: 'idle-notify',
    });
    expect(flagged!.flag!.meanUtilization).toBeCloseTo(0.03, 5);
    // Declared seconds: the stretch lasted a bit over the idle time (backend ms × the time scale).
    expect(flagged!.flag!.forSeconds as number).toBeGreaterThanOrEqual(1800);
    expect(flagged!.message).toMatch(
      /^GPU utilization 3% < 10% for 3\d min \(policy idle-notify: notify\): it keeps its GPUs\.$/,
    );

    const job = await read('aurora-research', id);
    expect(job.state).toBe('RUNNING');
    expect(job.governanceFlag).toMatchObject({ kind: 'IDLE', decision: 'NOTIFY', limitSeconds: 1800 });
    const flaggedEvent = job.events.edges.map((e: any) => e.node).find((e: any) => e.type === 'FLAGGED');
    expect(flaggedEvent).toMatchObject({ reason: 'IDLE', message: flagged!.message });
    const audits = await t.em().find(AuditEvent, { action: 'governance.job.flag', targetId: id });
    expect(audits).toHaveLength(1);
    expect(audits[0]!.tenant!.id).toBe(await t.tenantId('aurora-research'));
    expect(audits[0]!.actor).toBeNull();

    // Still idle at the next checks: flagged once, not again.
    await new Promise((r) => setTimeout(r, 200));
    expect((await t.events(id)).filter((e) => e.type === 'FLAGGED')).toHaveLength(1);

    // Utilization comes back: the flag is cleared, and the owner is told why.
    await t.samples(id, [[t.now.value + 5, 0.85]]);
    t.now.value += 10;
    const cleared = await until('flag cleared', async () =>
      (await t.job(id)).governanceFlag === null ? true : undefined,
    );
    expect(cleared).toBe(true);
    const clearEvent = (await t.events(id)).find((e) => e.type === 'FLAGGED' && e.reason === 'CLEARED');
    expect(clearEvent?.message).toBe(
      'GPU utilization back to 85% (threshold 10%): the IDLE flag is cleared.',
    );
    expect((await t.job(id)).state).toBe('RUNNING');
    await t.gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `mutation($id: ID!) { cancelJob(id: $id) { id } }`,
      { id: enc('Job', id) },
    );
  });

  it('RECLAIM_IF_BORROWING (built-in elastic, chosen by rule): notified while its queue is within quota, reclaimed once it borrows', async () => {
    await t.govern('aurora-research', { workloadType: 'TRAINING' });
    const id = await t.submit('aurora-research', 'idle-trainer', 8);
    const running = await t.waitState(id, ['RUNNING']);
    await idleFor(id, running.startedAt!.getTime(), 0.02);
    const notified = await until('flagged NOTIFY', async () => {
      const flag = (await t.job(id)).governanceFlag;
      return flag?.decision === 'NOTIFY' ? flag : undefined;
    });
    expect(notified).toMatchObject({ kind: 'IDLE', action: 'RECLAIM_IF_BORROWING', policy: 'elastic' });
    expect((await t.job(id)).state).toBe('RUNNING');

    // A second job takes the queue above its nominal (16 + 8 H100s): the same idle job is now reclaimed.
    const big = await t.submit('aurora-research', 'big-trainer', 16);
    await t.waitState(big, ['RUNNING']);
    const pending = await t.waitState(id, ['PENDING']);
    expect(pending.governanceFlag).toMatchObject({
      kind: 'IDLE',
      decision: 'RECLAIM',
      action: 'RECLAIM_IF_BORROWING',
    });
    const events = await aurora
      .until((v) => ofJob(v, id).some((e) => e.kind === 'PREEMPTED'))
      .then((v) => ofJob(v, id));
    expect(events.filter((e) => e.kind === 'JOB_FLAGGED').map((e) => e.flag!.decision)).toEqual([
      'NOTIFY',
      'RECLAIM',
    ]);
    const preempted = events.find((e) => e.kind === 'PREEMPTED')!;
    expect(preempted.reason).toBe('idle');
    expect(preempted.message).toMatch(
      /^GPU utilization 2% < 10% for 3\d min \(policy elastic: reclaim if borrowing\): its queue borrows, so its GPUs are reclaimed and it goes back to pending\.$/,
    );
    expect(preempted.flag).toMatchObject({ kind: 'IDLE', decision: 'RECLAIM' });
    const job = await read('aurora-research', id);
    expect(job.events.edges.map((e: any) => e.node).find((e: any) => e.type === 'PREEMPTED')).toMatchObject({
      reason: 'idle',
      message: preempted.message,
    });
    expect(job.pendingReason.code).toBe('ReclaimHold');
    for (const jobId of [id, big])
      await t.gql(
        t.token('aurora-research', 'TENANT_ADMIN'),
        `mutation($id: ID!) { cancelJob(id: $id) { id } }`,
        { id: enc('Job', jobId) },
      );
  });

  it('RECLAIM: reclaimed once, back to pending, not admitted again before the hold; readmitted after it, the old flag is dropped', async () => {
    await t.govern('borealis-inference', { isolationPolicy: 'idle-reclaim' });
    const id = await t.submit('borealis-inference', 'idle-server', 8);
    const running = await t.waitState(id, ['RUNNING']);
    await idleFor(id, running.startedAt!.getTime());
    const pending = await t.waitState(id, ['PENDING']);
    expect(pending.governanceFlag).toMatchObject({
      kind: 'IDLE',
      decision: 'RECLAIM',
      action: 'RECLAIM',
      policy: 'idle-reclaim',
    });
    expect(pending.preemptionCount).toBe(1);
    const reclaimedAt = t.now.value;

    // Held: several resync cycles at a clock short of the hold's end do not admit it.
    t.now.value = reclaimedAt + IDLE_MS - 300;
    await new Promise((r) => setTimeout(r, 400));
    expect((await t.job(id)).state).toBe('PENDING');
    const held = await read('borealis-inference', id);
    expect(held.pendingReason.code).toBe('ReclaimHold');
    expect(held.pendingReason.message).toMatch(/^Reclaimed by its queue's isolation policy/);

    t.now.value = reclaimedAt + IDLE_MS + 50;
    await t.waitState(id, ['ADMITTED', 'RUNNING']);
    // The flag of the earlier admission no longer applies, and the job is not reclaimed again.
    await until('old flag dropped', async () =>
      (await t.job(id)).governanceFlag === null ? true : undefined,
    );
    const job = await t.waitState(id, ['RUNNING']);
    expect(job.preemptionCount).toBe(1);
    expect((await t.events(id)).filter((e) => e.type === 'PREEMPTED').map((e) => e.reason)).toEqual(['idle']);

    const own = ofJob(borealis.values, id);
    expect(own.map((e) => e.kind)).toEqual(expect.arrayContaining(['JOB_FLAGGED', 'PREEMPTED', 'ADMITTED']));
    await t.gql(
      t.token('borealis-inference', 'TENANT_ADMIN'),
      `mutation($id: ID!) { cancelJob(id: $id) { id } }`,
      { id: enc('Job', id) },
    );
    await t.govern('borealis-inference', {});
  });

  it('the other tenant never hears of a flag or a reclaim, and cannot read the flag', async () => {
    // Every aurora job so far was flagged, several reclaimed: borealis's stream names none of them.
    const auroraJobs = (
      await t.em().find((await import('../../../src/persistence/jobs/entities.js')).Job, {
        tenant: { slug: 'aurora-research' },
      })
    ).map((j) => enc('Job', j.id));
    expect(auroraJobs.length).toBeGreaterThan(0);
    expect(borealis.values.filter((e) => e.jobId && auroraJobs.includes(e.jobId))).toEqual([]);
    expect(borealis.values.some((e) => e.kind === 'JOB_FLAGGED' && e.flag?.policy !== 'idle-reclaim')).toBe(
      false,
    );
    const borealisJobs = (
      await t.em().find((await import('../../../src/persistence/jobs/entities.js')).Job, {
        tenant: { slug: 'borealis-inference' },
      })
    ).map((j) => enc('Job', j.id));
    expect(aurora.values.filter((e) => e.jobId && borealisJobs.includes(e.jobId))).toEqual([]);
    for (const jobId of auroraJobs) {
      const res = await t.gql(
        t.token('borealis-inference', 'TENANT_ADMIN'),
        `query($id: ID!) { node(id: $id) { ... on Job { governanceFlag { kind meanUtilization } } } }`,
        { id: jobId },
      );
      expect(res.errors?.map((e) => e.extensions?.code)).toEqual(['NOT_FOUND']);
      expect(JSON.stringify(res)).not.toContain('IDLE');
    }
    expect(aurora.errors).toEqual([]);
    expect(borealis.errors).toEqual([]);
    expect(t.errors).toEqual([]);
  });
});
