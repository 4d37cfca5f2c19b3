import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import { expectOk, expectRefusedUnchanged, startTestApp, type TestApp } from '../../helpers/harness.js';
import { eventually } from '../../helpers/live-subscription.js';

/**
 * createPriorityClass: platform admins only, audited, checked before anything is written; the
 * scheduler orders pending jobs by the new class; a taken name is CONFLICT; a deleted class's
 * name may be used again.
 */
let t: TestApp;
let platform: string;
let ada: string;
let queueId: string;

const CLASS = 'name value preemptible description requiresGrant';
const CREATE = `mutation($in: CreatePriorityClassInput!) { createPriorityClass(input: $in) { ${CLASS} } }`;
const DELETE = `mutation($n: String!) { deletePriorityClass(name: $n) }`;
const CLASSES = `{ priorityClasses { ${CLASS} } }`;
const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;

async function classNamed(name: string): Promise<Record<string, unknown> | undefined> {
  return (await expectOk(t, platform, CLASSES)).priorityClasses.find(
    (c: { name: string }) => c.name === name,
  );
}

async function audits(action: string): Promise<string[]> {
  return (await systemEntityManager(t.app.orm).find(AuditEvent, { action })).map((r) => r.outcome);
}

/** Submits once the scheduler has loaded the queue and the class (both load after their commit). */
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
  let last: unknown;
  for (let i = 0; i < 100; i++) {
    const res = await t.gql(ada, SUBMIT, input);
    if (!res.body.errors) return res.body.data!.submitJob.id as string;
    last = res.body.errors;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never submitted: ${JSON.stringify(last)}`);
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

describeEachDialect('createPriorityClass', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    const aurora = await t.idsOf('aurora-research');
    platform = t.token(null, 'PLATFORM_ADMIN');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
    // A queue whose flavor has no nodes: its jobs wait, in priority order.
    await expectOk(
      t,
      platform,
      `mutation { createFlavor(input: { name: "pc-create-probe", kind: GPU, pricePerUnitHour: 1 }) { id } }`,
    );
    queueId = (
      await expectOk(t, platform, `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`, {
        in: {
          name: 'aurora-class-waiting',
          tenantId: aurora.Tenant,
          quotas: [{ flavor: 'pc-create-probe', nominal: 8 }],
        },
      })
    ).createQueue.id;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a platform admin creates a class: listed, audited, and the scheduler orders by it', async () => {
    const created = (
      await expectOk(t, platform, CREATE, {
        in: { name: 'urgent-eval', value: 500, preemptible: 'RECLAIM_ONLY', description: ' Evals first ' },
      })
    ).createPriorityClass;
    expect(created).toEqual({
      name: 'urgent-eval',
      value: 500,
      preemptible: 'RECLAIM_ONLY',
      description: 'Evals first',
      requiresGrant: false,
    });
    expect(await classNamed('urgent-eval')).toEqual(created);
    expect(await audits('priorityClass.create')).toContain('SUCCESS');
    const training = await submit('training');
    const urgent = await submit('urgent-eval');
    await eventually(async () => (await inQueue(urgent)) === 1 && (await inQueue(training)) === 2);
    for (const id of [urgent, training])
      await expectOk(t, ada, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id });
  });

  it('a tenant admin is FORBIDDEN; a taken name CONFLICT; bad input BAD_USER_INPUT; nothing written', async () => {
    const input = { name: 'not-mine', value: 1, preemptible: 'YES' };
    await expectRefusedUnchanged(t, ada, CREATE, { in: input }, 'FORBIDDEN');
    const taken = await expectRefusedUnchanged(
      t,
      platform,
      CREATE,
      { in: { ...input, name: 'training' } },
      'CONFLICT',
    );
    expect(taken.body.errors![0]!.message).toMatch(/"training" already exists/);
    for (const fields of [
      { name: 'Not A Name' },
      { name: 'x'.repeat(64) },
      { value: 2_000_000_000 },
      { description: 'x'.repeat(201) },
    ])
      await expectRefusedUnchanged(t, platform, CREATE, { in: { ...input, ...fields } }, 'BAD_USER_INPUT');
    expect(await classNamed('not-mine')).toBeUndefined();
  });

  it('a class that needs a grant is created as such; a deleted class can be created again', async () => {
    const granted = (
      await expectOk(t, platform, CREATE, {
        in: { name: 'reserved', value: 50, preemptible: 'NO', requiresGrant: true },
      })
    ).createPriorityClass;
    expect(granted).toMatchObject({ preemptible: 'NO', requiresGrant: true, description: null });
    expect((await expectOk(t, platform, DELETE, { n: 'reserved' })).deletePriorityClass).toBe('reserved');
    expect(await classNamed('reserved')).toBeUndefined();
    const again = (
      await expectOk(t, platform, CREATE, { in: { name: 'reserved', value: 7, preemptible: 'YES' } })
    ).createPriorityClass;
    expect(again).toMatchObject({ name: 'reserved', value: 7, requiresGrant: false });
  });
});
