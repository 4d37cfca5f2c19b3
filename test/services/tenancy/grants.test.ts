import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachDialect } from '../../helpers/database.js';
import { expectOk, expectRefusedUnchanged, startTestApp, type TestApp } from '../../helpers/harness.js';

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

const job = (priorityClass: string, extra: Record<string, unknown> = {}) => ({
  in: {
    queueId: aurora.Queue,
    name: `grant-probe-${++serial}`,
    priorityClass,
    podSets: [{ gpusPerPod: 1 }],
    expectedDurationSeconds: 60,
    ...extra,
  },
});

async function projectGrants(): Promise<{ grantedPriorityClasses: string[]; grantedPools: string[] }> {
  const data = await expectOk(
    t,
    ada,
    `query($id: ID!) { node(id: $id) { ... on Project { grantedPriorityClasses grantedPools } } }`,
    { id: aurora.Project },
  );
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
      const classes = (await expectOk(t, max, `{ priorityClasses { name requiresGrant } }`, {}))
        .priorityClasses;
      expect(classes.find((c: { name: string }) => c.name === 'inference-critical').requiresGrant).toBe(true);
      expect(
        classes
          .filter((c: { requiresGrant: boolean }) => c.requiresGrant)
          .map((c: { name: string }) => c.name),
      ).toEqual(['inference-critical']);
      const tenant = await expectOk(
        t,
        bea,
        `{ tenant(slug: "borealis-inference") { grantedPriorityClasses defaultProject: projects(first: 1) { edges { node { slug grantedPriorityClasses } } } } }`,
        {},
      );
      expect(tenant.tenant.grantedPriorityClasses).toEqual(['inference-critical']);
      expect(tenant.tenant.defaultProject.edges[0].node).toEqual({
        slug: 'chat-serving',
        grantedPriorityClasses: ['inference-critical'],
      });
      const bob = t.token('borealis-inference', 'MEMBER');
      const submitted = await expectOk(t, bob, SUBMIT, {
        in: {
          queueId: borealis.Queue,
          name: 'serving',
          priorityClass: 'inference-critical',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 60,
        },
      });
      expect(submitted.submitJob.priorityClass).toBe('inference-critical');
    });

    it('refused without a grant (FORBIDDEN, nothing written), in submit and preview alike', async () => {
      const res = await expectRefusedUnchanged(t, max, SUBMIT, job('inference-critical'), 'FORBIDDEN');
      expect(res.body.errors![0]!.message).toMatch(
        /"inference-critical" needs a grant.*tenant "aurora-research".*platform admin/,
      );
      expect(res.body.data?.submitJob ?? null).toBeNull();
      await expectRefusedUnchanged(t, max, PREVIEW, job('inference-critical'), 'FORBIDDEN');
      // Classes that need no grant are unaffected.
      await expectOk(t, max, PREVIEW, job('production'));
    });

    it('a tenant admin cannot grant beyond what the tenant holds, nor grant the tenant itself', async () => {
      const denied = await expectRefusedUnchanged(
        t,
        ada,
        GRANT_PROJECT,
        { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } },
        'FORBIDDEN',
      );
      expect(denied.body.errors![0]!.message).toMatch(
        /has not been granted priority class "inference-critical".*platform admin/,
      );
      await expectRefusedUnchanged(
        t,
        ada,
        GRANT_TENANT,
        { t: aurora.Tenant, c: 'inference-critical' },
        'FORBIDDEN',
      );
      await expectRefusedUnchanged(
        t,
        ada,
        GRANT_PROJECT,
        { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'no-such-class' } },
        'BAD_USER_INPUT',
      );
      await expectRefusedUnchanged(
        t,
        ada,
        GRANT_PROJECT,
        { in: { projectId: aurora.Project, kind: 'POOL', name: 'shared' } },
        'FORBIDDEN',
      );
      // Others: a member is no tenant admin; another tenant's admin does not see the project;
      // a platform admin changes a project only under a break-glass grant.
      await expectRefusedUnchanged(
        t,
        max,
        GRANT_PROJECT,
        { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } },
        'FORBIDDEN',
      );
      await expectRefusedUnchanged(
        t,
        bea,
        GRANT_PROJECT,
        { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } },
        'NOT_FOUND',
      );
      await expectRefusedUnchanged(
        t,
        platform,
        GRANT_PROJECT,
        { in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' } },
        'FORBIDDEN',
      );
      expect(await projectGrants()).toEqual({ grantedPriorityClasses: [], grantedPools: [] });
    });

    it('granted platform → tenant → project, the submit is accepted; revoked, refused again; all of it audited for the tenant', async () => {
      expect(
        (await expectOk(t, platform, GRANT_TENANT, { t: aurora.Tenant, c: 'inference-critical' }))
          .grantTenantPriorityClass.grantedPriorityClasses,
      ).toEqual(['inference-critical']);
      // The tenant holds it, the project not yet: the message says whom to ask now.
      const halfway = await expectRefusedUnchanged(t, max, SUBMIT, job('inference-critical'), 'FORBIDDEN');
      expect(halfway.body.errors![0]!.message).toMatch(
        /project "llm-pretraining" has not been granted it: ask a tenant admin of "aurora-research"/,
      );

      expect(
        (
          await expectOk(t, ada, GRANT_PROJECT, {
            in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' },
          })
        ).grantProjectAccess.grantedPriorityClasses,
      ).toEqual(['inference-critical']);
      const jobsBefore = (await t.rowCounts()).Job!;
      expect((await expectOk(t, max, SUBMIT, job('inference-critical'))).submitJob.priorityClass).toBe(
        'inference-critical',
      );
      expect((await t.rowCounts()).Job).toBe(jobsBefore + 1);

      expect(
        (
          await expectOk(t, ada, REVOKE_PROJECT, {
            in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' },
          })
        ).revokeProjectAccess.grantedPriorityClasses,
      ).toEqual([]);
      await expectRefusedUnchanged(t, max, SUBMIT, job('inference-critical'), 'FORBIDDEN');

      // Granted again, then revoked from the tenant: the project loses it too.
      await expectOk(t, ada, GRANT_PROJECT, {
        in: { projectId: aurora.Project, kind: 'PRIORITY_CLASS', name: 'inference-critical' },
      });
      expect(
        (await expectOk(t, platform, REVOKE_TENANT, { t: aurora.Tenant, c: 'inference-critical' }))
          .revokeTenantPriorityClass.grantedPriorityClasses,
      ).toEqual([]);
      expect((await projectGrants()).grantedPriorityClasses).toEqual([]);
      await expectRefusedUnchanged(t, max, SUBMIT, job('inference-critical'), 'FORBIDDEN');

      const log = await expectOk(
        t,
        otto,
        `query($id: ID!) { auditEvents(tenantId: $id, last: 100) { edges { node { action outcome targetType input } } } }`,
        { id: aurora.Tenant },
      );
      const actions = log.auditEvents.edges.map(
        (e: { node: { action: string; outcome: string } }) => `${e.node.action} ${e.node.outcome}`,
      );
      for (const expected of [
        'tenant.grantPriorityClass SUCCESS',
        'project.grantAccess SUCCESS',
        'project.revokeAccess SUCCESS',
        'tenant.revokePriorityClass SUCCESS',
        'project.grantAccess DENIED',
      ]) {
        expect(actions, expected).toContain(expected);
      }
      const grant = log.auditEvents.edges
        .map((e: { node: unknown }) => e.node)
        .find((n: { action: string }) => n.action === 'project.grantAccess');
      expect(grant.input).toMatchObject({ kind: 'PRIORITY_CLASS', name: 'inference-critical' });
    });

    it('only platform admins change whether a class needs a grant', async () => {
      const update = `mutation($in: UpdatePriorityClassInput!) { updatePriorityClass(input: $in) { name requiresGrant } }`;
      await expectRefusedUnchanged(
        t,
        ada,
        update,
        { in: { name: 'production', requiresGrant: true } },
        'FORBIDDEN',
      );
      expect(
        (await expectOk(t, platform, update, { in: { name: 'production', requiresGrant: true } }))
          .updatePriorityClass,
      ).toEqual({ name: 'production', requiresGrant: true });
      await expectRefusedUnchanged(t, max, SUBMIT, job('production'), 'FORBIDDEN');
      await expectOk(t, platform, update, { in: { name: 'production', requiresGrant: false } });
      await expectOk(t, max, PREVIEW, job('production'));
      await expectRefusedUnchanged(
        t,
        platform,
        update,
        { in: { name: 'no-such-class', requiresGrant: true } },
        'NOT_FOUND',
      );
    });
  });

  describe('dedicated pools', () => {
    it("a queue on a dedicated pool takes only projects granted the pool; tenant admins grant only the tenant's pools", async () => {
      await expectOk(
        t,
        platform,
        `mutation($in: CreateNodePoolInput!) { createNodePool(input: $in) { id } }`,
        {
          in: {
            name: 'aurora-private',
            dedicatedTenantId: aurora.Tenant,
            nodes: [
              { name: 'aurora-private-1', flavor: 'h100-80g', gpus: 8, cpuMillis: 64000, memoryMiB: 65536 },
            ],
          },
        },
      );
      const queue = await expectOk(
        t,
        platform,
        `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`,
        {
          in: {
            name: 'aurora-private-q',
            tenantId: aurora.Tenant,
            quotas: [{ flavor: 'h100-80g', nominal: 8 }],
            dedicatedPool: 'aurora-private',
          },
        },
      );
      const onPool = { queueId: queue.createQueue.id };
      const tenant = await expectOk(t, ada, `{ tenant(slug: "aurora-research") { dedicatedPools } }`, {});
      expect(tenant.tenant.dedicatedPools).toEqual(['aurora-private']);
      expect(
        (await expectOk(t, bea, `{ tenant(slug: "borealis-inference") { dedicatedPools } }`, {})).tenant
          .dedicatedPools,
      ).toEqual([]);

      const refused = await expectRefusedUnchanged(t, max, SUBMIT, job('training', onPool), 'FORBIDDEN');
      expect(refused.body.errors![0]!.message).toMatch(
        /dedicated pool "aurora-private".*project "llm-pretraining".*tenant admin/,
      );
      // Borealis cannot take Aurora's pool for its project.
      await expectRefusedUnchanged(
        t,
        bea,
        GRANT_PROJECT,
        { in: { projectId: borealis.Project, kind: 'POOL', name: 'aurora-private' } },
        'FORBIDDEN',
      );

      expect(
        (
          await expectOk(t, ada, GRANT_PROJECT, {
            in: { projectId: aurora.Project, kind: 'POOL', name: 'aurora-private' },
          })
        ).grantProjectAccess.grantedPools,
      ).toEqual(['aurora-private']);
      await expectOk(t, max, SUBMIT, job('training', onPool));
      await expectOk(t, ada, REVOKE_PROJECT, {
        in: { projectId: aurora.Project, kind: 'POOL', name: 'aurora-private' },
      });
      await expectRefusedUnchanged(t, max, SUBMIT, job('training', onPool), 'FORBIDDEN');
    });
  });
});
