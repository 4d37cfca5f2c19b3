import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import { expectOk, expectRefusedUnchanged, startTestApp, type TestApp } from '../../helpers/harness.js';
import { eventually } from '../../helpers/live-subscription.js';

/**
 * updateNodePool / deleteNodePool and updateCohort / deleteCohort: platform admins only,
 * audited, checked before anything is written; the scheduler places on new nodes and lends a
 * cohort's new quota at once; nothing in use is removed.
 */
let t: TestApp;
let platform: string;
let ada: string;
let aurora: Record<string, string>;
let borealis: Record<string, string>;
let serial = 0;

const POOL = 'id name dedicated nodes { name flavor gpus cpuMillis memoryMiB freeGpus }';
const CREATE_POOL = `mutation($in: CreateNodePoolInput!) { createNodePool(input: $in) { ${POOL} } }`;
const UPDATE_POOL = `mutation($in: UpdateNodePoolInput!) { updateNodePool(input: $in) { ${POOL} } }`;
const DELETE_POOL = `mutation($id: ID!) { deleteNodePool(id: $id) }`;
const COHORT = 'id name parentName quotas { flavor resource nominal }';
const CREATE_COHORT = `mutation($in: CreateCohortInput!) { createCohort(input: $in) { ${COHORT} } }`;
const UPDATE_COHORT = `mutation($in: UpdateCohortInput!) { updateCohort(input: $in) { ${COHORT} } }`;
const DELETE_COHORT = `mutation($id: ID!) { deleteCohort(id: $id) }`;
const CREATE_QUEUE = `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`;
const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;
const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible reason } }`;
const ghost = (type: string) =>
  Buffer.from(`${type}:01900000-0000-7000-8000-000000000000`).toString('base64');
const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1];

const node = (name: string, flavor: string, gpus = 8) => ({
  name,
  flavor,
  gpus,
  cpuMillis: 64_000,
  memoryMiB: 262_144,
});

async function newFlavor(): Promise<string> {
  const name = `fl-${++serial}`;
  await expectOk(t, platform, `mutation($in: CreateFlavorInput!) { createFlavor(input: $in) { id } }`, {
    in: { name, kind: 'GPU', pricePerUnitHour: 1 },
  });
  return name;
}

async function jobState(id: string): Promise<string> {
  return (await expectOk(t, ada, `query($id: ID!) { node(id: $id) { ... on Job { state } } }`, { id })).node
    .state;
}

async function audited(action: string, globalId: string): Promise<boolean> {
  const rows = await systemEntityManager(t.app.orm).find(AuditEvent, { action, outcome: 'SUCCESS' });
  return rows.some((r) => r.targetId === rawId(globalId));
}

describeEachDialect('updateNodePool, deleteNodePool, updateCohort, deleteCohort', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    borealis = await t.idsOf('borealis-inference');
    platform = t.token(null, 'PLATFORM_ADMIN');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('nodes added to a pool: a job waiting for them is admitted; audited', async () => {
    const flavor = await newFlavor();
    const queue = (
      await expectOk(t, platform, CREATE_QUEUE, {
        in: { name: `q-${flavor}`, tenantId: aurora.Tenant, quotas: [{ flavor, nominal: 8 }] },
      })
    ).createQueue;
    const pool = (await expectOk(t, platform, CREATE_POOL, { in: { name: `p-${flavor}`, nodes: [] } }))
      .createNodePool;
    const job = (
      await expectOk(t, ada, SUBMIT, {
        in: {
          queueId: queue.id,
          name: 'waits for nodes',
          podSets: [{ gpusPerPod: 4 }],
          expectedDurationSeconds: 1e5,
        },
      })
    ).submitJob;
    expect(job.state).toBe('PENDING');
    const updated = (
      await expectOk(t, platform, UPDATE_POOL, { in: { id: pool.id, nodes: [node(`${flavor}-n1`, flavor)] } })
    ).updateNodePool;
    expect(updated.nodes).toMatchObject([{ name: `${flavor}-n1`, flavor, gpus: 8 }]);
    expect(await audited('nodePool.update', pool.id)).toBe(true);
    await eventually(async () => ['ADMITTED', 'RUNNING'].includes(await jobState(job.id)));

    // A node a job runs on neither leaves nor changes its GPUs; CPU and memory may change.
    const removal = await expectRefusedUnchanged(
      t,
      platform,
      UPDATE_POOL,
      { in: { id: pool.id, nodes: [] } },
      'CONFLICT',
    );
    expect(removal.body.errors![0]!.message).toMatch(new RegExp(`node "${flavor}-n1" run\\(s\\) 1 live job`));
    await expectRefusedUnchanged(
      t,
      platform,
      UPDATE_POOL,
      { in: { id: pool.id, nodes: [node(`${flavor}-n1`, flavor, 4)] } },
      'CONFLICT',
    );
    const resized = (
      await expectOk(t, platform, UPDATE_POOL, {
        in: { id: pool.id, nodes: [{ ...node(`${flavor}-n1`, flavor), cpuMillis: 96_000 }] },
      })
    ).updateNodePool;
    expect(resized.nodes[0]).toMatchObject({ cpuMillis: 96_000, gpus: 8 });
    const withNodes = await expectRefusedUnchanged(t, platform, DELETE_POOL, { id: pool.id }, 'CONFLICT');
    expect(withNodes.body.errors![0]!.message).toMatch(/has 1 node\(s\)/);

    // Once the job is gone the node may leave, and the empty pool may go.
    await expectOk(t, ada, `mutation($id: ID!) { cancelJob(id: $id) { id } }`, { id: job.id });
    await eventually(async () => {
      const res = await t.gql(platform, UPDATE_POOL, { in: { id: pool.id, nodes: [] } });
      return !res.body.errors;
    });
    expect((await expectOk(t, platform, DELETE_POOL, { id: pool.id })).deleteNodePool).toBe(pool.id);
    expect(await audited('nodePool.delete', pool.id)).toBe(true);
    const { nodePools } = await expectOk(t, platform, `{ nodePools { name } }`);
    expect(nodePools.map((p: { name: string }) => p.name)).not.toContain(`p-${flavor}`);
  });

  it('a pool is dedicated to a tenant and shared again; an unknown tenant is NOT_FOUND', async () => {
    const pool = (await expectOk(t, platform, CREATE_POOL, { in: { name: `p-ded-${++serial}`, nodes: [] } }))
      .createNodePool;
    const dedicated = await expectOk(t, platform, UPDATE_POOL, {
      in: { id: pool.id, dedicatedTenantId: borealis.Tenant },
    });
    expect(dedicated.updateNodePool.dedicated).toBe(true);
    await expectRefusedUnchanged(
      t,
      platform,
      UPDATE_POOL,
      { in: { id: pool.id, dedicatedTenantId: ghost('Tenant') } },
      'NOT_FOUND',
    );
    const shared = await expectOk(t, platform, UPDATE_POOL, { in: { id: pool.id, dedicatedTenantId: null } });
    expect(shared.updateNodePool.dedicated).toBe(false);
  });

  it('node pool input is checked: BAD_USER_INPUT or CONFLICT, nothing written', async () => {
    const flavor = await newFlavor();
    const pool = (
      await expectOk(t, platform, CREATE_POOL, {
        in: { name: `p-${flavor}`, nodes: [node(`${flavor}-a`, flavor)] },
      })
    ).createNodePool;
    const cases: [unknown[], string, RegExp][] = [
      [[node('dup', flavor), node('dup', flavor)], 'BAD_USER_INPUT', /unique/],
      [[node(`${flavor}-b`, 'no-such-flavor')], 'BAD_USER_INPUT', /unknown flavor "no-such-flavor"/],
      [[{ ...node(`${flavor}-b`, flavor), gpus: -1 }], 'BAD_USER_INPUT', /must not be negative/],
      [[node('h100-node-1', 'h100-80g')], 'CONFLICT', /"h100-node-1" already belongs to another pool/],
    ];
    for (const [nodes, code, message] of cases) {
      const res = await expectRefusedUnchanged(
        t,
        platform,
        UPDATE_POOL,
        { in: { id: pool.id, nodes } },
        code,
      );
      expect(res.body.errors![0]!.message).toMatch(message);
    }
    const { nodePools } = await expectOk(t, platform, `{ nodePools { name nodes { name } } }`);
    expect(nodePools.find((p: { name: string }) => p.name === `p-${flavor}`).nodes).toEqual([
      { name: `${flavor}-a` },
    ]);
  });

  it('a cohort given quota lends it at once: a preview that did not fit now does; audited', async () => {
    const flavor = await newFlavor();
    await expectOk(t, platform, CREATE_POOL, {
      in: { name: `p-${flavor}`, nodes: [node(`${flavor}-n`, flavor)] },
    });
    const cohort = (await expectOk(t, platform, CREATE_COHORT, { in: { name: `c-${flavor}` } })).createCohort;
    const queue = (
      await expectOk(t, platform, CREATE_QUEUE, {
        in: {
          name: `q-${flavor}`,
          tenantId: aurora.Tenant,
          cohortId: cohort.id,
          quotas: [{ flavor, nominal: 0 }],
        },
      })
    ).createQueue;
    const job = {
      in: { queueId: queue.id, name: 'borrows', podSets: [{ gpusPerPod: 4 }], expectedDurationSeconds: 600 },
    };
    // The leader's core takes the new queue after the commit (a moment later): until then a preview says
    // UNKNOWN_QUEUE.
    let first: { admissible: boolean } | undefined;
    await eventually(async () => {
      const res = await t.gql(ada, PREVIEW, job);
      first = res.body.data?.previewJob ?? undefined;
      return first !== undefined;
    });
    expect(first!.admissible).toBe(false);
    const updated = (
      await expectOk(t, platform, UPDATE_COHORT, { in: { id: cohort.id, quotas: [{ flavor, nominal: 8 }] } })
    ).updateCohort;
    expect(updated.quotas).toEqual([{ flavor, resource: 'GPU', nominal: 8 }]);
    expect(await audited('cohort.update', cohort.id)).toBe(true);
    await eventually(async () => (await expectOk(t, ada, PREVIEW, job)).previewJob.admissible === true);
  });

  it('a cohort moves in the tree, never under its own child; its queues and children keep it from deletion', async () => {
    const parent = (await expectOk(t, platform, CREATE_COHORT, { in: { name: `top-${++serial}` } }))
      .createCohort;
    const child = (
      await expectOk(t, platform, CREATE_COHORT, { in: { name: `child-${serial}`, parentId: parent.id } })
    ).createCohort;
    const cycle = await expectRefusedUnchanged(
      t,
      platform,
      UPDATE_COHORT,
      { in: { id: parent.id, parentId: child.id } },
      'BAD_USER_INPUT',
    );
    expect(cycle.body.errors![0]!.message).toMatch(/own ancestor/);
    await expectRefusedUnchanged(
      t,
      platform,
      UPDATE_COHORT,
      { in: { id: parent.id, quotas: [{ flavor: 'no-such-flavor', nominal: 1 }] } },
      'BAD_USER_INPUT',
    );
    await expectRefusedUnchanged(
      t,
      platform,
      UPDATE_COHORT,
      { in: { id: parent.id, quotas: [{ flavor: 'h100-80g', nominal: -1 }] } },
      'BAD_USER_INPUT',
    );
    const nested = await expectRefusedUnchanged(t, platform, DELETE_COHORT, { id: parent.id }, 'CONFLICT');
    expect(nested.body.errors![0]!.message).toMatch(
      new RegExp(`cohort "child-${serial}" nest\\(s\\) under it`),
    );
    const { cohorts } = await expectOk(t, platform, `{ cohorts { id name } }`);
    const research = cohorts.find((c: { name: string }) => c.name === 'research-pool');
    const withQueues = await expectRefusedUnchanged(
      t,
      platform,
      DELETE_COHORT,
      { id: research.id },
      'CONFLICT',
    );
    expect(withQueues.body.errors![0]!.message).toMatch(/queue "aurora-training", "borealis-serving"/);

    const moved = (await expectOk(t, platform, UPDATE_COHORT, { in: { id: child.id, parentId: null } }))
      .updateCohort;
    expect(moved.parentName).toBeNull();
    expect((await expectOk(t, platform, DELETE_COHORT, { id: parent.id })).deleteCohort).toBe(parent.id);
    expect(await audited('cohort.delete', parent.id)).toBe(true);
    const after = (await expectOk(t, platform, `{ cohorts { name } }`)).cohorts.map(
      (c: { name: string }) => c.name,
    );
    expect(after).toContain(`child-${serial}`);
    expect(after).not.toContain(`top-${serial}`);
  });

  it('a tenant admin is FORBIDDEN; unknown ids are NOT_FOUND; nothing changes', async () => {
    const pool = (await expectOk(t, platform, CREATE_POOL, { in: { name: `p-f-${++serial}`, nodes: [] } }))
      .createNodePool;
    const cohort = (await expectOk(t, platform, CREATE_COHORT, { in: { name: `c-f-${serial}` } }))
      .createCohort;
    await expectRefusedUnchanged(t, ada, UPDATE_POOL, { in: { id: pool.id, nodes: [] } }, 'FORBIDDEN');
    await expectRefusedUnchanged(t, ada, DELETE_POOL, { id: pool.id }, 'FORBIDDEN');
    await expectRefusedUnchanged(t, ada, UPDATE_COHORT, { in: { id: cohort.id, quotas: [] } }, 'FORBIDDEN');
    await expectRefusedUnchanged(t, ada, DELETE_COHORT, { id: cohort.id }, 'FORBIDDEN');
    await expectRefusedUnchanged(
      t,
      platform,
      UPDATE_POOL,
      { in: { id: ghost('NodePool'), nodes: [] } },
      'NOT_FOUND',
    );
    await expectRefusedUnchanged(t, platform, DELETE_POOL, { id: ghost('NodePool') }, 'NOT_FOUND');
    await expectRefusedUnchanged(t, platform, UPDATE_COHORT, { in: { id: ghost('Cohort') } }, 'NOT_FOUND');
    await expectRefusedUnchanged(t, platform, DELETE_COHORT, { id: ghost('Cohort') }, 'NOT_FOUND');
    await expectRefusedUnchanged(
      t,
      platform,
      UPDATE_COHORT,
      { in: { id: cohort.id, parentId: ghost('Cohort') } },
      'NOT_FOUND',
    );
  });
});
