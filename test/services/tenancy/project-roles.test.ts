import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { ProjectMembership } from '../../../src/persistence/tenancy/access-entities.js';
import { Project, Tenant } from '../../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, type GqlResponse, startTestApp, type TestApp } from '../../helpers/harness.js';

/**
 * Project roles end to end: a project admin manages their own project and
 * nothing else; contributors submit and cancel their own jobs; read-only tenant roles stay
 * read-only in projects; refused calls change nothing.
 */
let t: TestApp;
let ids: Record<string, string>;
const s = {} as Record<'ada' | 'max' | 'vera' | 'otto' | 'bea' | 'pam' | 'cleo' | 'nora', string>;
let P: string; // llm-pretraining (aurora's default project)
let Q: string; // a second project, created here
let cleoMember: string;
let noraMember: string;

const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');

async function ok<T = any>(
  bearer: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<T> {
  const res = await t.gql(bearer, query, variables);
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data as T;
}

/** Everything the mutations here could change (the harness counts only identity rows). */
async function snapshot() {
  const em = t.app.orm.em.fork({ clear: true });
  em.setFilterParams(TENANT_FILTER, { all: true });
  const projectRoles = (await em.find(ProjectMembership, {}, { orderBy: { id: 'asc' } })).map((r) => [
    r.id,
    r.project.id,
    r.user.id,
    r.role,
  ]);
  const projects = (await em.find(Project, {}, { orderBy: { id: 'asc' } })).map((p) => [
    p.id,
    p.name,
    p.description,
    p.status,
    p.jobVisibility,
    p.defaultQueueId,
  ]);
  const tenants = (await em.find(Tenant, {}, { orderBy: { id: 'asc' } })).map((x) => [
    x.id,
    x.projectsOpen,
    x.defaultProjectId,
  ]);
  // The scheduler moves jobs on by itself (PENDING → RUNNING); a refused cancel must not end one.
  const jobs = (await em.find(Job, {}, { orderBy: { id: 'asc' } })).map((j) => [
    j.id,
    j.state === 'CANCELLED' ? 'CANCELLED' : 'not cancelled',
    j.project?.id ?? null,
  ]);
  return { counts: await t.rowCounts({ ignoreAudit: true }), projectRoles, projects, tenants, jobs };
}

/** The call is refused with `code`, answers no data and changes nothing. */
async function refused(
  bearer: string,
  code: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<GqlResponse> {
  const before = await snapshot();
  const res = await t.gql(bearer, query, variables);
  expect(codesOf(res), JSON.stringify(res.body)).toEqual([code]);
  expect(Object.values(res.body.data ?? {}).filter((v) => v !== null)).toEqual([]);
  expect(await snapshot()).toEqual(before);
  return res;
}

const ADD_MEMBER = `mutation($in: AddMemberInput!) { addMember(input: $in) { id role } }`;
const ADD_PM = `mutation($in: AddProjectMemberInput!) { addProjectMember(input: $in) { id role name isViewer project { id } } }`;
const CHANGE_PM = `mutation($id: ID!, $role: ProjectRole!) { changeProjectMemberRole(id: $id, role: $role) { id role } }`;
const REMOVE_PM = `mutation($id: ID!) { removeProjectMember(id: $id) { removedProjectMemberId } }`;
const UPDATE_PROJECT = `mutation($in: UpdateProjectInput!) { updateProject(input: $in) { id name jobVisibility } }`;
const SETTINGS = `mutation($in: UpdateTenantSettingsInput!) { updateTenantSettings(input: $in) { id projectsOpen defaultProject { id } } }`;
const SET_QUEUE = `mutation($p: ID!, $q: ID) { setProjectQueue(projectId: $p, queueId: $q) { id } }`;
const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;
const CANCEL = `mutation($id: ID!) { cancelJob(id: $id) { id state } }`;
const MEMBERS = `query($id: ID!) { node(id: $id) { ... on Project { viewerRole isDefault jobVisibility members(first: 50) { edges { node { id name role isViewer } } } } } }`;

const job = (projectId: string, extra: Record<string, unknown> = {}) => ({
  in: { projectId, name: 'train', podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 3600, ...extra },
});

async function membersOf(bearer: string, projectId: string) {
  const data = await ok(bearer, MEMBERS, { id: projectId });
  return data.node as {
    viewerRole: string | null;
    isDefault: boolean;
    jobVisibility: string;
    members: { edges: { node: { id: string; name: string; role: string; isViewer: boolean } }[] };
  };
}

async function projectMemberId(projectId: string, name: string): Promise<string> {
  const found = (await membersOf(s.ada, projectId)).members.edges.find((e) => e.node.name === name);
  if (!found) throw new Error(`${name} is not in the project`);
  return found.node.id;
}

describeEachDialect('project roles', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    ids = await t.idsOf('aurora-research');
    P = ids.Project!;
    for (const who of ['ada', 'max', 'vera', 'otto'] as const) s[who] = await t.jwt(`${who}@aurora.example`);
    s.bea = await t.jwt('bea@borealis.example');
    Q = (
      await ok(s.ada, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`, {
        in: { tenantId: ids.Tenant, slug: 'vision', name: 'Vision' },
      })
    ).createProject.id;
    // A tenant MEMBER made admin of P in the same call that adds them to the tenant.
    await ok(s.ada, ADD_MEMBER, {
      in: {
        tenantId: ids.Tenant,
        email: 'pam@aurora.example',
        name: 'Pam',
        role: 'MEMBER',
        projects: [{ projectId: P, role: 'PROJECT_ADMIN' }],
      },
    });
    cleoMember = (
      await ok(s.ada, ADD_MEMBER, {
        in: { tenantId: ids.Tenant, email: 'cleo@aurora.example', name: 'Cleo', role: 'MEMBER' },
      })
    ).addMember.id;
    noraMember = (
      await ok(s.ada, ADD_MEMBER, {
        in: { tenantId: ids.Tenant, email: 'nora@aurora.example', name: 'Nora', role: 'MEMBER' },
      })
    ).addMember.id;
    for (const who of ['pam', 'cleo', 'nora'] as const) s[who] = await t.jwt(`${who}@aurora.example`);
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('project admins', () => {
    it('addMember.projects makes a tenant member a project admin, who sees it as their role', async () => {
      const p = await membersOf(s.pam, P);
      expect(p.viewerRole).toBe('PROJECT_ADMIN');
      expect(p.isDefault).toBe(true);
      expect(p.members.edges.map((e) => [e.node.name, e.node.role, e.node.isViewer])).toContainEqual([
        'Pam',
        'PROJECT_ADMIN',
        true,
      ]);
      expect((await membersOf(s.pam, Q)).viewerRole).toBeNull();
      expect((await membersOf(s.ada, Q)).viewerRole).toBe('PROJECT_ADMIN');
      expect((await membersOf(s.max, P)).viewerRole).toBe('CONTRIBUTOR');
      expect((await membersOf(s.nora, P)).viewerRole).toBeNull();
    });

    it("manages their project's members, default queue and visibility, each audited", async () => {
      const added = (await ok(s.pam, ADD_PM, { in: { projectId: P, memberId: cleoMember, role: 'VIEWER' } }))
        .addProjectMember;
      expect(added).toMatchObject({ role: 'VIEWER', name: 'Cleo', isViewer: false, project: { id: P } });
      expect(
        (await ok(s.pam, CHANGE_PM, { id: added.id, role: 'CONTRIBUTOR' })).changeProjectMemberRole.role,
      ).toBe('CONTRIBUTOR');
      expect((await ok(s.pam, SET_QUEUE, { p: P, q: ids.Queue })).setProjectQueue.id).toBe(P);
      expect(
        (
          await ok(s.pam, UPDATE_PROJECT, {
            in: { id: P, jobVisibility: 'SUBMITTER', description: 'Pre-training runs' },
          })
        ).updateProject.jobVisibility,
      ).toBe('SUBMITTER');
      expect(
        (await ok(s.pam, UPDATE_PROJECT, { in: { id: P, jobVisibility: 'PROJECT' } })).updateProject
          .jobVisibility,
      ).toBe('PROJECT');
      // The node interface resolves project members, inside the tenant only.
      const node = await ok(
        s.max,
        `query($id: ID!) { node(id: $id) { ... on ProjectMember { role project { id } } } }`,
        { id: added.id },
      );
      expect(node.node).toEqual({ role: 'CONTRIBUTOR', project: { id: P } });
      await refused(s.bea, 'NOT_FOUND', `query($id: ID!) { node(id: $id) { id } }`, { id: added.id });

      const em = t.app.orm.em.fork({ clear: true });
      em.setFilterParams(TENANT_FILTER, { all: true });
      const actions = (await em.find(AuditEvent, { action: { $like: 'project.%' }, outcome: 'SUCCESS' })).map(
        (e) => e.action,
      );
      expect(actions).toEqual(
        expect.arrayContaining([
          'project.addMember',
          'project.changeMemberRole',
          'project.setQueue',
          'project.update',
        ]),
      );
    });

    it('is refused on another project and on tenant-level actions, changing nothing', async () => {
      await refused(s.pam, 'FORBIDDEN', ADD_PM, {
        in: { projectId: Q, memberId: noraMember, role: 'CONTRIBUTOR' },
      });
      await refused(s.pam, 'FORBIDDEN', SET_QUEUE, { p: Q, q: ids.Queue });
      await refused(s.pam, 'FORBIDDEN', UPDATE_PROJECT, { in: { id: Q, name: 'Mine now' } });
      await refused(
        s.pam,
        'FORBIDDEN',
        `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
        { in: { tenantId: ids.Tenant, slug: 'pams', name: 'Pams' } },
      );
      await refused(s.pam, 'FORBIDDEN', `mutation($id: ID!) { archiveProject(id: $id) { id } }`, { id: Q });
      await refused(s.pam, 'FORBIDDEN', SETTINGS, { in: { tenantId: ids.Tenant, projectsOpen: true } });
      await refused(s.pam, 'FORBIDDEN', ADD_MEMBER, {
        in: { tenantId: ids.Tenant, email: 'zed@aurora.example', role: 'MEMBER' },
      });
      // Nor can they make anyone admin of a project they do not run through addMember.
      await refused(s.pam, 'FORBIDDEN', ADD_MEMBER, {
        in: {
          tenantId: ids.Tenant,
          email: 'zed@aurora.example',
          role: 'MEMBER',
          projects: [{ projectId: P, role: 'CONTRIBUTOR' }],
        },
      });
      // A contributor does not manage the project.
      await refused(s.max, 'FORBIDDEN', ADD_PM, {
        in: { projectId: P, memberId: noraMember, role: 'VIEWER' },
      });
      await refused(s.max, 'FORBIDDEN', REMOVE_PM, { id: await projectMemberId(P, 'Pam') });
    });

    it('outsiders learn nothing (NOT_FOUND), and change nothing', async () => {
      const maxRow = await projectMemberId(P, 'Max Member');
      await refused(s.bea, 'NOT_FOUND', ADD_PM, {
        in: { projectId: P, memberId: noraMember, role: 'VIEWER' },
      });
      await refused(s.bea, 'NOT_FOUND', CHANGE_PM, { id: maxRow, role: 'VIEWER' });
      await refused(s.bea, 'NOT_FOUND', REMOVE_PM, { id: maxRow });
      await refused(s.bea, 'NOT_FOUND', UPDATE_PROJECT, { in: { id: P, name: 'x' } });
      await refused(s.bea, 'NOT_FOUND', SETTINGS, { in: { tenantId: ids.Tenant, projectsOpen: true } });
      // A Borealis member cannot be added to an Aurora project either (an Aurora admin names a foreign
      // member).
      const borealis = await t.idsOf('borealis-inference');
      await refused(s.ada, 'NOT_FOUND', ADD_PM, {
        in: { projectId: P, memberId: borealis.Member, role: 'VIEWER' },
      });
      await refused(s.ada, 'NOT_FOUND', SETTINGS, {
        in: { tenantId: ids.Tenant, defaultProjectId: borealis.Project },
      });
    });
  });

  describe('read-only tenant roles and conflicts', () => {
    it('a tenant VIEWER or AUDITOR cannot be made CONTRIBUTOR or PROJECT_ADMIN (BAD_USER_INPUT)', async () => {
      const members = await ok(
        s.ada,
        `query($t: ID!) { members(tenantId: $t, first: 50) { edges { node { id name } } } }`,
        { t: ids.Tenant },
      );
      const memberId = (name: string) => members.members.edges.find((e: any) => e.node.name === name).node.id;
      await refused(s.ada, 'BAD_USER_INPUT', ADD_PM, {
        in: { projectId: Q, memberId: memberId('Vera Viewer'), role: 'CONTRIBUTOR' },
      });
      await refused(s.ada, 'BAD_USER_INPUT', ADD_PM, {
        in: { projectId: Q, memberId: memberId('Otto Auditor'), role: 'PROJECT_ADMIN' },
      });
      await refused(s.ada, 'BAD_USER_INPUT', CHANGE_PM, {
        id: await projectMemberId(P, 'Vera Viewer'),
        role: 'CONTRIBUTOR',
      });
      // All or nothing: neither the user, the membership nor the project role is written.
      await refused(s.ada, 'BAD_USER_INPUT', ADD_MEMBER, {
        in: {
          tenantId: ids.Tenant,
          email: 'val@aurora.example',
          role: 'VIEWER',
          projects: [{ projectId: P, role: 'CONTRIBUTOR' }],
        },
      });
      await refused(s.ada, 'NOT_FOUND', ADD_MEMBER, {
        in: {
          tenantId: ids.Tenant,
          email: 'val@aurora.example',
          role: 'MEMBER',
          projects: [{ projectId: enc('Project', '0190a0a0-0000-7000-8000-000000000000'), role: 'VIEWER' }],
        },
      });
      // VIEWER is fine.
      const added = (
        await ok(s.ada, ADD_PM, { in: { projectId: Q, memberId: memberId('Otto Auditor'), role: 'VIEWER' } })
      ).addProjectMember;
      expect(added.role).toBe('VIEWER');
    });

    it('adding someone already in the project is a CONFLICT', async () => {
      const maxMember = ids.Member; // aurora's MEMBER membership (Max)
      await refused(s.pam, 'CONFLICT', ADD_PM, {
        in: { projectId: P, memberId: maxMember, role: 'PROJECT_ADMIN' },
      });
    });

    it('a person may leave a project themself; others need to manage it', async () => {
      const otto = await t.jwt('otto@aurora.example');
      const row = await projectMemberId(Q, 'Otto Auditor');
      await refused(s.vera, 'FORBIDDEN', REMOVE_PM, { id: row });
      expect((await ok(otto, REMOVE_PM, { id: row })).removeProjectMember.removedProjectMemberId).toBe(row);
      expect((await membersOf(s.ada, Q)).members.edges).toEqual([]);
    });
  });

  describe('jobs in projects', () => {
    it('a contributor submits and cancels their own jobs in the project, not into another project', async () => {
      const mine = (await ok(s.max, SUBMIT, job(P))).submitJob;
      expect((await ok(s.max, CANCEL, { id: mine.id })).cancelJob.state).toBe('CANCELLED');
      const res = await refused(s.max, 'FORBIDDEN', SUBMIT, job(Q, { queueId: ids.Queue }));
      expect(res.body.errors![0]!.message).toContain('contributor');
    });

    it("a contributor cannot cancel another contributor's job; the project's admin can", async () => {
      const maxJob = (await ok(s.max, SUBMIT, job(P))).submitJob.id;
      const cleoJob = (await ok(s.cleo, SUBMIT, job(P))).submitJob.id;
      await refused(s.cleo, 'FORBIDDEN', CANCEL, { id: maxJob });
      await refused(s.max, 'FORBIDDEN', CANCEL, { id: cleoJob });
      expect((await ok(s.pam, CANCEL, { id: maxJob })).cancelJob.state).toBe('CANCELLED');
      expect((await ok(s.pam, CANCEL, { id: cleoJob })).cancelJob.state).toBe('CANCELLED');
    });

    it("a submit naming neither project nor queue, from a caller of one tenant, lands in its default project and that project's queue", async () => {
      const res = await ok(
        s.max,
        `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id project { id } queue { id } } }`,
        { in: { name: 'anywhere', podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 60 } },
      );
      expect(res.submitJob.project.id).toBe(P);
      expect(res.submitJob.queue.id).toBe(ids.Queue);
      expect((await ok(s.max, CANCEL, { id: res.submitJob.id })).cancelJob.state).toBe('CANCELLED');
      await refused(s.nora, 'FORBIDDEN', SUBMIT, { in: { name: 'anywhere', podSets: [{ gpusPerPod: 1 }] } });
    });

    it('a tenant MEMBER without a project role cannot submit (not even to the default project)', async () => {
      await refused(s.nora, 'FORBIDDEN', SUBMIT, job(P));
      await refused(s.nora, 'FORBIDDEN', SUBMIT, {
        in: {
          queueId: ids.Queue,
          name: 'train',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 3600,
        },
      });
      await refused(s.nora, 'FORBIDDEN', SUBMIT, job(Q, { queueId: ids.Queue }));
    });
  });

  describe('tenant settings', () => {
    const CONTAINER = `query($id: ID!) { node(id: $id) { ... on Job { name container { image } } } }`;

    async function container(
      bearer: string,
      jobId: string,
    ): Promise<{ image: string | null; codes: string[] }> {
      const res = await t.gql(bearer, CONTAINER, { id: jobId });
      expect(res.body.data?.node).toMatchObject({ name: 'train' }); // metadata stays readable
      return { image: (res.body.data?.node as any)?.container?.image ?? null, codes: codesOf(res) };
    }

    it("job content follows the project's visibility and the tenant's projectsOpen", async () => {
      const image = 'nvcr.io/nvidia/pytorch:24.05-py3';
      const jobId = (await ok(s.max, SUBMIT, job(P, { container: { image } }))).submitJob.id;
      const readable = { image, codes: [] };
      const hidden = { image: null, codes: ['FORBIDDEN'] };
      expect(await container(s.max, jobId)).toEqual(readable);
      expect(await container(s.cleo, jobId)).toEqual(readable); // project member, visibility PROJECT
      expect(await container(s.nora, jobId)).toEqual(hidden); // not in the project, projects closed

      await ok(s.pam, UPDATE_PROJECT, { in: { id: P, jobVisibility: 'SUBMITTER' } });
      expect(await container(s.cleo, jobId)).toEqual(hidden);
      expect(await container(s.pam, jobId)).toEqual(readable);
      expect(await container(s.ada, jobId)).toEqual(readable);
      expect(await container(s.max, jobId)).toEqual(readable);
      await ok(s.pam, UPDATE_PROJECT, { in: { id: P, jobVisibility: 'PROJECT' } });

      expect(
        (await ok(s.ada, SETTINGS, { in: { tenantId: ids.Tenant, projectsOpen: true } })).updateTenantSettings
          .projectsOpen,
      ).toBe(true);
      expect(
        (await ok(s.nora, `query { tenant(slug: "aurora-research") { projectsOpen } }`)).tenant.projectsOpen,
      ).toBe(true);
      expect(await container(s.nora, jobId)).toEqual(readable);
      await ok(s.pam, UPDATE_PROJECT, { in: { id: P, jobVisibility: 'SUBMITTER' } });
      expect(await container(s.nora, jobId)).toEqual(hidden); // SUBMITTER wins over an open tenant
      await ok(s.pam, UPDATE_PROJECT, { in: { id: P, jobVisibility: 'PROJECT' } });
      await ok(s.ada, SETTINGS, { in: { tenantId: ids.Tenant, projectsOpen: false } });
      expect(await container(s.nora, jobId)).toEqual(hidden);
      await ok(s.max, CANCEL, { id: jobId });
    });

    it('tenant admins choose the default project', async () => {
      const tenant = await ok(s.ada, SETTINGS, { in: { tenantId: ids.Tenant, defaultProjectId: Q } });
      expect(tenant.updateTenantSettings.defaultProject).toEqual({ id: Q });
      expect((await membersOf(s.max, Q)).isDefault).toBe(true);
      expect((await membersOf(s.max, P)).isDefault).toBe(false);
      await ok(s.ada, SETTINGS, { in: { tenantId: ids.Tenant, defaultProjectId: P } });
      expect(
        (await ok(s.vera, `query { tenant(slug: "aurora-research") { defaultProject { id } } }`)).tenant
          .defaultProject,
      ).toEqual({ id: P });
    });
  });

  describe('leaving the tenant', () => {
    it('removing a tenant member removes their project roles, so they cannot act in the project', async () => {
      const em = t.app.orm.em.fork({ clear: true });
      em.setFilterParams(TENANT_FILTER, { all: true });
      const cleoRow = await projectMemberId(P, 'Cleo');
      expect(await em.count(ProjectMembership, { id: fromGlobal(cleoRow) })).toBe(1);
      await ok(s.ada, `mutation($id: ID!) { removeMember(id: $id) { removedMemberId } }`, { id: cleoMember });
      expect(await em.count(ProjectMembership, { id: fromGlobal(cleoRow) })).toBe(0);
      expect((await membersOf(s.ada, P)).members.edges.map((e) => e.node.name)).not.toContain('Cleo');
      // Added back to the tenant, Cleo has no project role left.
      await ok(s.ada, ADD_MEMBER, {
        in: { tenantId: ids.Tenant, email: 'cleo@aurora.example', name: 'Cleo', role: 'MEMBER' },
      });
      await refused(s.cleo, 'FORBIDDEN', SUBMIT, job(P));
    });
  });
});

function fromGlobal(globalId: string): string {
  return Buffer.from(globalId, 'base64').toString('utf8').split(':')[1]!;
}
