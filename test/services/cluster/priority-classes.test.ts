import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import {
  codesOf,
  expectOk,
  expectRefusedUnchanged,
  startTestApp,
  type TestApp,
} from '../../helpers/harness.js';
import { eventually } from '../../helpers/live-subscription.js';

/**
 * updatePriorityClass and deletePriorityClass: platform admins only, audited, checked before
 * anything is written; the scheduler reorders pending jobs by a new value at once; a class
 * anything names (jobs, grants, the API's defaults) is not deleted.
 */
let t: TestApp;
let platform: string;
let ada: string;
let aurora: Record<string, string>;
let queueId: string;

const CLASS = 'name value preemptible description requiresGrant';
const UPDATE = `mutation($in: UpdatePriorityClassInput!) { updatePriorityClass(input: $in) { ${CLASS} } }`;
const DELETE = `mutation($n: String!) { deletePriorityClass(name: $n) }`;
const CLASSES = `{ priorityClasses { ${CLASS} } }`;
const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;

async function classNamed(name: string): Promise<Record<string, unknown> | undefined> {
  return (await expectOk(t, platform, CLASSES)).priorityClasses.find(
    (c: { name: string }) => c.name === name,
  );
}

async function submit(priorityClass: string): Promise<string> {
  const input = {
    in: {
      queueId,
      name: `${priorityClass} job`,
      priorityClass,
      podSets: [{ gpusPerPod: 1 }],
      expectedDurationSeconds: 600,
    },
  };
  // The scheduler loads a new queue after the create commits (asynchronously): until then a submit to it
  // is refused as UNKNOWN_QUEUE, with nothing written.
  for (let i = 0; i < 100; i++) {
    const res = await t.gql(ada, SUBMIT, input);
    if (res.body.errors?.[0]?.extensions?.reason !== 'UNKNOWN_QUEUE') {
      expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
      return res.body.data!.submitJob.id as string;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the scheduler never loaded the new queue');
}

async function inQueue(id: string): Promise<number | null> {
  const data = await expectOk(
    t,
    ada,
    `query($id: ID!) { node(id: $id) { ... on Job { position { inQueue } } } }`,
    { id },
  );
  return data.node.position?.inQueue ?? null;
}

async function audits(action: string): Promise<string[]> {
  return (await systemEntityManager(t.app.orm).find(AuditEvent, { action })).map((r) => r.outcome);
}

describeEachDialect('updatePriorityClass and deletePriorityClass', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    platform = t.token(null, 'PLATFORM_ADMIN');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
    // A queue whose flavor has no nodes: its jobs wait, in priority order.
    await expectOk(
      t,
      platform,
      `mutation { createFlavor(input: { name: "pc-probe", kind: GPU, pricePerUnitHour: 1 }) { id } }`,
    );
    queueId = (
      await expectOk(t, platform, `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`, {
        in: { name: 'aurora-waiting', tenantId: aurora.Tenant, quotas: [{ flavor: 'pc-probe', nominal: 8 }] },
      })
    ).createQueue.id;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a new value reorders the pending jobs of the class at once; audited', async () => {
    const experiment = await submit('experiment');
    const training = await submit('training');
    await eventually(async () => (await inQueue(training)) === 1 && (await inQueue(experiment)) === 2);
    const updated = (
      await expectOk(t, platform, UPDATE, {
        in: {
          name: 'experiment',
          value: 200,
          preemptible: 'RECLAIM_ONLY',
          description: 'Sweeps, for now first',
        },
      })
    ).updatePriorityClass;
    expect(updated).toEqual({
      name: 'experiment',
      value: 200,
      preemptible: 'RECLAIM_ONLY',
      description: 'Sweeps, for now first',
      requiresGrant: false,
    });
    await eventually(async () => (await inQueue(experiment)) === 1 && (await inQueue(training)) === 2);
    expect(await audits('priorityClass.update')).toContain('SUCCESS');
    // Fields left out stay; null clears the description.
    const back = (
      await expectOk(t, platform, UPDATE, {
        in: { name: 'experiment', value: 10, preemptible: 'YES', description: null },
      })
    ).updatePriorityClass;
    expect(back).toMatchObject({ value: 10, preemptible: 'YES', description: null, requiresGrant: false });
    await eventually(async () => (await inQueue(training)) === 1);
    for (const id of [experiment, training])
      await expectOk(t, ada, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id });
  });

  it('a class becomes never-preempted only while none of its admitted jobs runs on borrowed quota', async () => {
    const borealis = await t.idsOf('borealis-inference');
    const bea = t.token('borealis-inference', 'TENANT_ADMIN');
    // 24 H100s on a nominal of 16: borrowed from Aurora's idle half.
    const borrowing = (
      await expectOk(t, bea, SUBMIT, {
        in: {
          queueId: borealis.Queue,
          name: 'borrows',
          priorityClass: 'experiment',
          podSets: [{ count: 3, gpusPerPod: 8, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e5,
        },
      })
    ).submitJob.id;
    const borrowed = async () =>
      (
        await expectOk(t, bea, `query($id: ID!) { node(id: $id) { ... on Job { state borrowed } } }`, {
          id: borrowing,
        })
      ).node;
    await eventually(async () => (await borrowed()).borrowed === true);
    const refused = await expectRefusedUnchanged(
      t,
      platform,
      UPDATE,
      { in: { name: 'experiment', preemptible: 'NO' } },
      'CONFLICT',
    );
    expect(refused.body.errors![0]!.message).toMatch(
      /1 admitted job\(s\) of it run on borrowed quota \(queue "borealis-serving"\)/,
    );
    expect((await classNamed('experiment'))?.preemptible).toBe('YES');
    await expectOk(t, bea, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id: borrowing });
  });

  it('a tenant admin is FORBIDDEN; bad input is BAD_USER_INPUT; an unknown name NOT_FOUND; nothing changes', async () => {
    const before = await classNamed('experiment');
    await expectRefusedUnchanged(t, ada, UPDATE, { in: { name: 'experiment', value: 5 } }, 'FORBIDDEN');
    await expectRefusedUnchanged(t, ada, DELETE, { n: 'experiment' }, 'FORBIDDEN');
    for (const fields of [{ value: 2_000_000_000 }, { value: 1.5 }, { description: 'x'.repeat(201) }]) {
      await expectRefusedUnchanged(
        t,
        platform,
        UPDATE,
        { in: { name: 'experiment', ...fields } },
        'BAD_USER_INPUT',
      );
    }
    await expectRefusedUnchanged(
      t,
      platform,
      UPDATE,
      { in: { name: 'no-such-class', value: 1 } },
      'NOT_FOUND',
    );
    await expectRefusedUnchanged(t, platform, DELETE, { n: 'no-such-class' }, 'NOT_FOUND');
    expect(await classNamed('experiment')).toEqual(before);
  });

  it('a class in use is not deleted: CONFLICT naming the API default, live jobs, grants', async () => {
    const fallback = await expectRefusedUnchanged(t, platform, DELETE, { n: 'training' }, 'CONFLICT');
    expect(fallback.body.errors![0]!.message).toMatch(/submitJob and submitJobs use it/);
    const live = await submit('experiment');
    const withJob = await expectRefusedUnchanged(t, platform, DELETE, { n: 'experiment' }, 'CONFLICT');
    expect(withJob.body.errors![0]!.message).toMatch(
      /1 live job\(s\) of this class \(queue "aurora-waiting"\)/,
    );
    await expectOk(t, ada, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id: live });
    const grant = `mutation($t: ID!, $c: String!) { grantTenantPriorityClass(tenantId: $t, priorityClass: $c) { id } }`;
    await expectOk(t, platform, grant, { t: aurora.Tenant, c: 'experiment' });
    const granted = await expectRefusedUnchanged(t, platform, DELETE, { n: 'experiment' }, 'CONFLICT');
    expect(granted.body.errors![0]!.message).toMatch(/granted to tenant "aurora-research"/);
    await expectOk(
      t,
      platform,
      `mutation($t: ID!, $c: String!) { revokeTenantPriorityClass(tenantId: $t, priorityClass: $c) { id } }`,
      { t: aurora.Tenant, c: 'experiment' },
    );
    expect(await classNamed('experiment')).toBeDefined();
  });

  it('an unused class is deleted with its multipliers, audited; submits naming it are refused', async () => {
    await expectOk(
      t,
      platform,
      `mutation { setPriceMultiplier(input: { priorityClass: "experiment", multiplier: 0.5 }) { multiplier } }`,
    );
    expect((await expectOk(t, platform, DELETE, { n: 'experiment' })).deletePriorityClass).toBe('experiment');
    expect(await classNamed('experiment')).toBeUndefined();
    const book = await expectOk(t, platform, `{ priceBook { multipliers { priorityClass } } }`);
    expect(book.priceBook.multipliers.map((m: { priorityClass: string }) => m.priorityClass)).not.toContain(
      'experiment',
    );
    expect(await audits('priorityClass.delete')).toContain('SUCCESS');
    const res = await t.gql(ada, SUBMIT, {
      in: { queueId, name: 'gone', priorityClass: 'experiment', podSets: [{ gpusPerPod: 1 }] },
    });
    expect(codesOf(res)).toEqual(['BAD_USER_INPUT']);
  });
});
