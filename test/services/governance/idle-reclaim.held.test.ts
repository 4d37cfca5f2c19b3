// Held reclaim: a job admitted but not running after its queue's policy limit is flagged
// NOT_RUNNING and — per the policy — notified or reclaimed with reason 'not-running'. Queues outside
// governance are left alone (and a flag whose queue leaves governance is dropped); a flag lives in
// the database, so a leader that rebuilds its core does not raise it again.
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

/** The test policies' not-running limit (15 declared minutes) and idle time (30) in the backend's clock. */
const NOT_RUNNING_MS = (15 * MIN) / TIME_SCALE;
const IDLE_MS = (30 * MIN) / TIME_SCALE;

type TenantEvent = FlagTenantEvent;

describeEachDialect('held reclaim', (dialect) => {
  let t: IdleApp;
  let aurora: LiveSubscription<TenantEvent>;
  let borealis: LiveSubscription<TenantEvent>;
  let listening: BothTenantsListening | undefined;
  const cancel = (slug: string, id: string) =>
    t.gql(t.token(slug, 'TENANT_ADMIN'), `mutation($id: ID!) { cancelJob(id: $id) { id } }`, {
      id: enc('Job', id),
    });
  const ofJob = (events: TenantEvent[], jobId: string) => events.filter((e) => e.jobId === enc('Job', jobId));
  const settle = () => new Promise((r) => setTimeout(r, 250)); // several idle checks (every 40 ms)

  beforeAll(async () => {
    t = await startIdleApp(dialect);
    await t.policy('held-notify', 'NOTIFY');
    await t.policy('held-reclaim', 'RECLAIM');
    listening = await listenToBothTenants(t, 'MEMBER');
    ({ aurora, borealis } = listening);
  }, 30_000);
  afterAll(async () => {
    await listening?.dispose();
    await t?.close();
  });

  it('NOT_RUNNING + RECLAIM: reclaimed with reason not-running and the numbers; the other tenant hears nothing', async () => {
    await t.govern('borealis-inference', { isolationPolicy: 'held-reclaim' });
    const id = await t.submit('borealis-inference', 'stuck-loader', 8);
    const admitted = await t.waitState(id, ['ADMITTED']);
    t.now.value = admitted.admittedAt!.getTime() + NOT_RUNNING_MS + 60;
    const pending = await t.waitState(id, ['PENDING']);
    expect(pending.governanceFlag).toMatchObject({
      kind: 'NOT_RUNNING',
      decision: 'RECLAIM',
      action: 'RECLAIM',
      policy: 'held-reclaim',
      meanUtilization: null,
      limitMs: 15 * MIN,
    });

    const events = await borealis
      .until((v) => ofJob(v, id).some((e) => e.kind === 'PREEMPTED'))
      .then((v) => ofJob(v, id));
    const flagged = events.find((e) => e.kind === 'JOB_FLAGGED')!;
    expect(flagged.flag).toMatchObject({
      kind: 'NOT_RUNNING',
      decision: 'RECLAIM',
      limitSeconds: 900,
      meanUtilization: null,
      utilizationBelow: null,
    });
    expect(flagged.flag!.forSeconds as number).toBeGreaterThanOrEqual(900);
    const preempted = events.find((e) => e.kind === 'PREEMPTED')!;
    expect(preempted.reason).toBe('not-running');
    expect(preempted.message).toMatch(
      /^Admitted 1\d min ago and still not running \(limit 15 min\) \(policy held-reclaim: reclaim\): its GPUs are reclaimed and it goes back to pending\.$/,
    );
    const jobEvents = await t.events(id);
    expect(jobEvents.find((e) => e.type === 'PREEMPTED')).toMatchObject({
      reason: 'not-running',
      message: preempted.message,
    });
    expect(jobEvents.find((e) => e.type === 'FLAGGED')).toMatchObject({ reason: 'NOT_RUNNING' });
    const audit = await t.em().findOneOrFail(AuditEvent, { action: 'governance.job.flag', targetId: id });
    expect(audit.tenant!.id).toBe(await t.tenantId('borealis-inference'));

    // The other tenant: no event, and the job (with its flag) is NOT_FOUND.
    expect(ofJob(aurora.values, id)).toEqual([]);
    const foreign = await t.gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `query($id: ID!) { node(id: $id) { ... on Job { governanceFlag { kind } } } }`,
      { id: enc('Job', id) },
    );
    expect(foreign.errors?.map((e) => e.extensions?.code)).toEqual(['NOT_FOUND']);
    expect(JSON.stringify(foreign)).not.toContain('NOT_RUNNING');
    // Its owner's member reads it.
    const own = await t.gql(
      t.token('borealis-inference', 'MEMBER'),
      `query($id: ID!) { node(id: $id) { ... on Job { governanceFlag { kind decision limitSeconds } } } }`,
      { id: enc('Job', id) },
    );
    expect(own.data?.node.governanceFlag).toEqual({
      kind: 'NOT_RUNNING',
      decision: 'RECLAIM',
      limitSeconds: 900,
    });
    await cancel('borealis-inference', id);
    await t.govern('borealis-inference', {});
  });

  it('NOT_RUNNING + NOTIFY: flagged once, the job keeps its admission; a rebuilt core (a new leader) does not flag it again', async () => {
    await t.govern('aurora-research', { isolationPolicy: 'held-notify' });
    const id = await t.submit('aurora-research', 'stuck-notebook', 8);
    const admitted = await t.waitState(id, ['ADMITTED']);
    t.now.value = Math.max(t.now.value, admitted.admittedAt!.getTime() + NOT_RUNNING_MS + 60);
    const flag = await until('flagged', async () => (await t.job(id)).governanceFlag ?? undefined);
    expect(flag).toMatchObject({ kind: 'NOT_RUNNING', decision: 'NOTIFY', action: 'NOTIFY' });
    const message = (await aurora
      .until((v) => ofJob(v, id).some((e) => e.kind === 'JOB_FLAGGED'))
      .then((v) => ofJob(v, id).find((e) => e.kind === 'JOB_FLAGGED')))!.message;
    expect(message).toMatch(
      /^Admitted 1\d min ago and still not running \(limit 15 min\) \(policy held-notify: notify\): it keeps its GPUs\.$/,
    );

    await t.app.scheduler.rebuild();
    t.now.value += 100;
    await settle();
    expect((await t.job(id)).state).toBe('ADMITTED');
    expect((await t.events(id)).filter((e) => e.type === 'FLAGGED')).toHaveLength(1);
    expect(await t.em().count(AuditEvent, { action: 'governance.job.flag', targetId: id })).toBe(1);

    // The queue leaves governance: nothing decides about the job any more, its flag is dropped (audited).
    await t.govern('aurora-research', {});
    await until('flag dropped', async () => ((await t.job(id)).governanceFlag === null ? true : undefined));
    expect(await t.em().count(AuditEvent, { action: 'governance.job.unflag', targetId: id })).toBe(1);
    await cancel('aurora-research', id);
  });

  it('an ungoverned queue: idle and stuck jobs are neither flagged nor reclaimed', async () => {
    await t.govern('aurora-research', {});
    const idle = await t.submit('aurora-research', 'idle-ungoverned', 8);
    const stuck = await t.submit('aurora-research', 'stuck-ungoverned', 8);
    const running = await t.waitState(idle, ['RUNNING']);
    await t.waitState(stuck, ['ADMITTED']);
    const start = running.startedAt!.getTime();
    await t.samples(
      idle,
      [0, 1, 2, 3, 4, 5].map((i) => [start + 10 + (i * IDLE_MS) / 4, 0.01] as [number, number]),
    );
    t.now.value = Math.max(t.now.value, start + 2 * IDLE_MS);
    await settle();
    for (const id of [idle, stuck]) {
      const job = await t.job(id);
      expect(job.governanceFlag).toBeNull();
      expect(job.preemptionCount).toBe(0);
      expect((await t.events(id)).filter((e) => e.type === 'FLAGGED' || e.type === 'PREEMPTED')).toEqual([]);
      expect(ofJob(aurora.values, id).filter((e) => e.kind !== 'ADMITTED')).toEqual([]);
    }
    expect((await t.job(idle)).state).toBe('RUNNING');
    expect((await t.job(stuck)).state).toBe('ADMITTED');
    for (const id of [idle, stuck]) await cancel('aurora-research', id);
    expect(aurora.errors).toEqual([]);
    expect(borealis.errors).toEqual([]);
    expect(t.errors).toEqual([]);
  });
});
