import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TENANT_FILTER } from '../src/persistence/entities.js';
import { Job } from '../src/persistence/scheduling-entities.js';
import { describeEachDialect } from './helpers/database.js';
import { codesOf, startTestApp, type GqlResponse, type TestApp } from './helpers/harness.js';

let t: TestApp;
let aurora: Record<string, string>;
let borealis: Record<string, string>;
let platform: string;
let ada: string;
let max: string;
let otto: string;
let bea: string;
let serial = 0;

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id priorityClass } }`;
const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible } }`;
const GRANT_TENANT = `mutation($t: ID!, $c: String!) { grantTenantPriorityClass(tenantId: $t, priorityClass: $c) { id grantedPriorityClasses } }`;
const REVOKE_TENANT = `mutation($t: ID!, $c: String!) { revokeTenantPriorityClass(tenantId: $t, priorityClass: $c) { id grantedPriorityClasses } }`;
const GRANT_PROJECT = `mutation($in: ProjectAccessInput!) { grantProjectAccess(input: $in) { id grantedPriorityClasses grantedPools } }`;
const REVOKE_PROJECT = `mutation($in: ProjectAccessInput!) { revokeProjectAccess(input: $in) { id grantedPriorityClasses grantedPools } }`;

const job = (priorityClass: string, extra: Record<string, unknown> = {}) => ({ in: { queueId: aurora.Queue, name: `grant-probe-${++serial}`, priorityClass, podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 60, ...extra } });

async function jobCount(): Promise<number> {
  const em = t.app.orm.em.fork({ clear: true });
  em.setFilterParams(TENANT_FILTER, { all: true });
  return em.count(Job, {});
}

/** Runs a call that must be refused with `code`, and proves it changed nothing (no rows, no job). */
async function refusedUnchanged(bearer: string, query: string, variables: Record<string, unknown>, code: string): Promise<GqlResponse> {
  const before = { rows: await t.rowCounts({ ignoreAudit: true }), jobs: await jobCount() };
  const res = await t.gql(bearer, query, variables);
  expect(codesOf(res), JSON.stringify(res.body)).toEqual([code]);
  expect({ rows: await t.rowCounts({ ignoreAudit: true }), jobs: await jobCount() }).toEqual(before);
  return res;
}

async function ok(bearer: string, query: string, variables: Record<string, unknown>) {
  const res = await t.gql(bearer, query, variables);
  expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
  return res.body.data!;
}

async function projectGrants(): Promise<{ grantedPriorityClasses: string[]; grantedPools: string[] }> {
  const data = await ok(ada, `query($id: ID!) { node(id: $id) { ... on Project { grantedPriorityClasses grantedPools } } }`, { id: aurora.Project });
  return data.node;
}

describeEachDialect('grants and pools', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    borealis = await t.idsOf('borealis-inference');
    platform = t.token(null, 'PLATFORM_ADMIN');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
    max = t.token('aurora-research', 'MEMBER');
    otto = t.token('aurora-research', 'AUDITOR');
    bea = t.token('borealis-inference', 'TENANT_ADMIN');
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('priority classes that need a grant', () => {
    it('inference-critical needs a grant by default; the demo grants it to Borealis and its chat-serving project', async () => {
      const classes = (await ok(max, `{ priorityClasses { name requiresGrant } }`, {})).priorityClasses;
      expect(classes.find((c: { name: string }) => c.name === 'inference-critical').requiresGrant).toBe(true);
      expect(classes.filter((c: { requiresGrant: boolean }) => c.requiresGrant).map((c: { name: string }) => c.name)).toEqual(['inference-critical']);
      const tenant = await ok(bea, `{ tenant(slug: "borealis-inference") { grantedPriorityClasses defaultProject: projects(first: 1) { edges { node { slug grantedPriorityClasses } } } } }`, {});
      expect(tenant.tenant.grantedPriorityClasses).toEqual(['inference-critical']);
      expect(tenant.tenant.defaultProject.edges[0].node).toEqual({ slug: 'chat-serving', grantedPriorityClasses: ['inference-critical'] });
      const bob = t.token('borealis-inference', 'MEMBER');
      const submitted = await ok(bob, SUBMIT, { in: { queueId: borealis.Queue, name: 'serving', priorityClass: 'inference-critical', podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 60 } });
      expect(submitted.submitJob.priorityClass).toBe('inference-critical');
    });

    it('refused without a grant (FORBIDDEN, nothing written), in submit and preview alike', async () => {
      const res = await refusedUnchanged(max, SUBMIT, job('inference-critical'), 'FORBIDDEN');
      expect(res.body.errors![0]!.message).toMatch(/"inference-critical" needs a grant.*tenant "aurora-research".*platform admin/);
      expect(res.body.data?.submitJob ?? null).toBeNull();
      await refusedUnchanged(max, PREVIEW, job('inference-critical'), 'FORBIDDEN');
      // Classes that need no grant are unaffected.
      await ok(max, PREVIEW, job('production'));
    });

    it('a tenant admin cannot grant beyond what the tenant holds, nor grant the tenant itself', async () => {
      const denied = await refusedUnchanged(ada, GRANT_PROJECT, { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } }, 'FORBIDDEN');
      expect(denied.body.errors![0]!.message).toMatch(/has not been granted priority class "inference-critical".*platform admin/);
      await refusedUnchanged(ada, GRANT_TENANT, { t: aurora.Tenant, c: 'inference-critical' }, 'FORBIDDEN');
      await refusedUnchanged(ada, GRANT_PROJECT, { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'no-such-class' } }, 'BAD_USER_INPUT');
      await refusedUnchanged(ada, GRANT_PROJECT, { in: { projectId: aurora.Project, kind: 'POOL', name: 'shared' } }, 'FORBIDDEN');
      // Others: a member is no tenant admin; another tenant's admin does not see the project;
      // a platform admin changes a project only under a break-glass grant.
      await refusedUnchanged(max, GRANT_PROJECT, { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } }, 'FORBIDDEN');
      await refusedUnchanged(bea, GRANT_PROJECT, { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } }, 'NOT_FOUND');
      await refusedUnchanged(platform, GRANT_PROJECT, { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } }, 'FORBIDDEN');
      expect(await projectGrants()).toEqual({ grantedPriorityClasses: [], grantedPools: [] });
    });

    it('granted platform → tenant → project, the submit is accepted; revoked, refused again; all of it audited for the tenant', async () => {
      expect((await ok(platform, GRANT_TENANT, { t: aurora.Tenant, c: 'inference-critical' })).grantTenantPriorityClass.grantedPriorityClasses).toEqual(['inference-critical']);
      // The tenant holds it, the project not yet: the message says whom to ask now.
      const halfway = await refusedUnchanged(max, SUBMIT, job('inference-critical'), 'FORBIDDEN');
      expect(halfway.body.errors![0]!.message).toMatch(/project "llm-pretraining" has not been granted it: ask a tenant admin of "aurora-research"/);

      expect((await ok(ada, GRANT_PROJECT, { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } })).grantProjectAccess.grantedPriorityClasses).toEqual(['inference-critical']);
      const jobsBefore = await jobCount();
      expect((await ok(max, SUBMIT, job('inference-critical'))).submitJob.priorityClass).toBe('inference-critical');
      expect(await jobCount()).toBe(jobsBefore + 1);

      expect((await ok(ada, REVOKE_PROJECT, { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } })).revokeProjectAccess.grantedPriorityClasses).toEqual([]);
      await refusedUnchanged(max, SUBMIT, job('inference-critical'), 'FORBIDDEN');

      // Granted again, then revoked from the tenant: the project loses it too.
      await ok(ada, GRANT_PROJECT, { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } });
      expect((await ok(platform, REVOKE_TENANT, { t: aurora.Tenant, c: 'inference-critical' })).revokeTenantPriorityClass.grantedPriorityClasses).toEqual([]);
      expect((await projectGrants()).grantedPriorityClasses).toEqual([]);
      await refusedUnchanged(max, SUBMIT, job('inference-critical'), 'FORBIDDEN');

      const log = await ok(otto, `query($id: ID!) { auditEvents(tenantId: $id, last: 100) { edges { node { action outcome targetType input } } } }`, { id: aurora.Tenant });
      const actions = log.auditEvents.edges.map((e: { node: { action: string; outcome: string } }) => `${e.node.action} ${e.node.outcome}`);
      for (const expected of ['tenant.grantPriorityClass SUCCESS', 'project.grantAccess SUCCESS', 'project.revokeAccess SUCCESS', 'tenant.revokePriorityClass SUCCESS', 'project.grantAccess DENIED']) {
        expect(actions, expected).toContain(expected);
      }
      const grant = log.auditEvents.edges.map((e: { node: unknown }) => e.node).find((n: { action: string }) => n.action === 'project.grantAccess');
      expect(grant.input).toMatchObject({ kind: 'PRIORITY_CLASS', name: 'inference-critical' });
    });

    it('only platform admins change whether a class needs a grant', async () => {
      const update = `mutation($in: UpdatePriorityClassInput!) { updatePriorityClass(input: $in) { name requiresGrant } }`;
      await refusedUnchanged(ada, update, { in: { name: 'production', requiresGrant: true } }, 'FORBIDDEN');
      expect((await ok(platform, update, { in: { name: 'production', requiresGrant: true } })).updatePriorityClass).toEqual({ name: 'production', requiresGrant: true });
      await refusedUnchanged(max, SUBMIT, job('production'), 'FORBIDDEN');
      await ok(platform, update, { in: { name: 'production', requiresGrant: false } });
      await ok(max, PREVIEW, job('production'));
      await refusedUnchanged(platform, update, { in: { name: 'no-such-class', requiresGrant: true } }, 'NOT_FOUND');
    });
  });

  describe('dedicated pools', () => {
    it("a queue on a dedicated pool takes only projects granted the pool; tenant admins grant only the tenant's pools", async () => {
      await ok(platform, `mutation($in: CreateNodePoolInput!) { createNodePool(input: $in) { id } }`, {
        in: { name: 'aurora-private', dedicatedTenantId: aurora.Tenant, nodes: [{ name: 'aurora-private-1', flavor: 'h100-80g', gpus: 8, cpuMillis: 64000, memoryMiB: 65536 }] },
      });
      const queue = await ok(platform, `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`, {
        in: { name: 'aurora-private-q', tenantId: aurora.Tenant, quotas: [{ flavor: 'h100-80g', nominal: 8 }], dedicatedPool: 'aurora-private' },
      });
      const onPool = { queueId: queue.createQueue.id };
      const tenant = await ok(ada, `{ tenant(slug: "aurora-research") { dedicatedPools } }`, {});
      expect(tenant.tenant.dedicatedPools).toEqual(['aurora-private']);
      expect((await ok(bea, `{ tenant(slug: "borealis-inference") { dedicatedPools } }`, {})).tenant.dedicatedPools).toEqual([]);

      const refused = await refusedUnchanged(max, SUBMIT, job('training', onPool), 'FORBIDDEN');
      expect(refused.body.errors![0]!.message).toMatch(/dedicated pool "aurora-private".*project "llm-pretraining".*tenant admin/);
      // Borealis cannot take Aurora's pool for its project.
      await refusedUnchanged(bea, GRANT_PROJECT, { in: { projectId: borealis.Project, kind: 'POOL', name: 'aurora-private' } }, 'FORBIDDEN');

      expect((await ok(ada, GRANT_PROJECT, { in: { projectId: aurora.Project, kind: 'POOL', name: 'aurora-private' } })).grantProjectAccess.grantedPools).toEqual(['aurora-private']);
      await ok(max, SUBMIT, job('training', onPool));
      await ok(ada, REVOKE_PROJECT, { in: { projectId: aurora.Project, kind: 'POOL', name: 'aurora-private' } });
      await refusedUnchanged(max, SUBMIT, job('training', onPool), 'FORBIDDEN');
    });
  });
});
