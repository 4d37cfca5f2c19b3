import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { readSubmitRows } from '../../src/persistence/jobs/index.js';
import { Project, Tenant } from '../../src/persistence/tenancy/entities.js';
import { scopedEntityManager, TENANT_FILTER } from '../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../helpers/database.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

describeEachDialect('readSubmitRows: a submit read in one statement', (dialect) => {
  let t: TestApp;
  let aurora: Tenant;
  let borealis: Tenant;
  let auroraQueue: Queue;
  let borealisQueue: Queue;
  let borealisProject: Project;
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    const all = scopedEntityManager(t.app.orm, { all: true });
    aurora = await all.findOneOrFail(Tenant, { slug: 'aurora-research' });
    borealis = await all.findOneOrFail(Tenant, { slug: 'borealis-inference' });
    auroraQueue = await all.findOneOrFail(Queue, { tenant: aurora.id, name: 'aurora-training' });
    borealisQueue = await all.findOneOrFail(Queue, { tenant: borealis.id });
    borealisProject = await all.findOneOrFail(Project, { tenant: borealis.id });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const asAurora = () => {
    const em = t.app.orm.em.fork({ clear: true });
    em.setFilterParams(TENANT_FILTER, { tenantIds: [aurora.id] });
    return em;
  };
  const read = (queueId: string, more: { projectId?: string; key?: string; priorityClass?: string } = {}) =>
    readSubmitRows(asAurora(), {
      queueId,
      projectId: more.projectId ?? null,
      priorityClass: more.priorityClass ?? 'training',
      idempotencyKey: more.key ?? null,
    });

  it("reads the queue, its tenant, the tenant's default project and the priority class", async () => {
    const rows = await read(auroraQueue.id);
    expect(rows?.queue.id).toBe(auroraQueue.id);
    expect(rows?.queue.name).toBe('aurora-training');
    expect(rows?.tenant.id).toBe(aurora.id);
    expect(rows?.project?.id).toBe(aurora.defaultProjectId);
    expect(rows?.priorityClass?.name).toBe('training');
    expect(rows?.existing).toBeNull();
    expect((await read(auroraQueue.id, { priorityClass: 'no-such-class' }))?.priorityClass).toBeNull();
  });

  it("finds nothing of another tenant: its queue, or its project under one's own queue", async () => {
    expect(await read(borealisQueue.id)).toBeNull();
    const rows = await read(auroraQueue.id, { projectId: borealisProject.id });
    expect(rows?.project).toBeNull();
  });

  it('finds the job an earlier submit made under the key, in the queue tenant only', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const res = await t.gql(member, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
      in: {
        queueId: Buffer.from(`Queue:${auroraQueue.id}`).toString('base64'),
        name: 'keyed',
        idempotencyKey: 'submit-rows-key',
        podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }],
        expectedDurationSeconds: 60,
      },
    });
    expect(res.body.errors).toBeUndefined();
    const id = Buffer.from((res.body.data as { submitJob: { id: string } }).submitJob.id, 'base64')
      .toString()
      .split(':')[1];
    const rows = await read(auroraQueue.id, { key: 'submit-rows-key' });
    expect(rows?.existing?.id).toBe(id);
    expect(rows?.existing?.requestHash).toMatch(/^[0-9a-f]{64}$/);
    expect((await read(auroraQueue.id, { key: 'another-key' }))?.existing).toBeNull();
  });
});
