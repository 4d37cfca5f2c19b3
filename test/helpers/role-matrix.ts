import { afterAll, beforeAll, expect, it } from 'vitest';
import { codesOf, type GqlResponse, startTestApp, type TestApp } from './harness.js';

/**
 * The role matrix's callers, all looking at the demo tenant aurora-research. P is aurora's
 * default project (llm-pretraining), Q another aurora project; the project roles are given
 * through the API by the tenant admin, as a tenant would do it.
 */
export const CALLERS = [
  'anonymous',
  'platformAdmin', // no membership, no break-glass grant
  'tenantAdmin',
  'projectAdmin', // MEMBER, PROJECT_ADMIN of P
  'contributor', // MEMBER, CONTRIBUTOR of P
  'projectViewer', // MEMBER, VIEWER of P
  'memberWithoutProject', // MEMBER, no project role
  'viewer', // tenant VIEWER (and, from the demo, project VIEWER of P)
  'auditor',
  'outsider', // the admin of another tenant
] as const;
export type Caller = (typeof CALLERS)[number];
export type Expect = 'OK' | 'UNAUTHENTICATED' | 'FORBIDDEN' | 'NOT_FOUND';
export type Expectations = Record<Caller, Expect>;

export interface MatrixRow {
  /** The mutation's name, then what the row is about: "updateProject (Q: another project)". */
  name: string;
  query: string;
  /** Runs before each call (as whoever the setup needs), outside the row counts compared. */
  variables: () => Promise<Record<string, unknown>>;
  expect: Expectations;
  /** Undoes what an allowed call left behind that would change later rows (runs after every call). */
  after?: (res: GqlResponse<any>) => Promise<void>;
}

/**
 * Only the listed callers may; everyone else is refused: anonymous UNAUTHENTICATED, the
 * outsider NOT_FOUND (they must not learn that aurora's things exist), the rest FORBIDDEN.
 */
export function only(...allowed: Caller[]): Expectations {
  const out = {} as Expectations;
  for (const caller of CALLERS)
    out[caller] = allowed.includes(caller)
      ? 'OK'
      : caller === 'anonymous'
        ? 'UNAUTHENTICATED'
        : caller === 'outsider'
          ? 'NOT_FOUND'
          : 'FORBIDDEN';
  return out;
}

/** Platform configuration: platform admins only; for everyone else it is FORBIDDEN whatever the target. */
export const PLATFORM_ONLY: Expectations = { ...only('platformAdmin'), outsider: 'FORBIDDEN' };

const EMAILS: Record<Exclude<Caller, 'anonymous'>, string> = {
  platformAdmin: 'admin@fairway.example',
  tenantAdmin: 'ada@aurora.example',
  projectAdmin: 'pat@aurora.example',
  contributor: 'cora@aurora.example',
  projectViewer: 'pia@aurora.example',
  memberWithoutProject: 'nemo@aurora.example',
  viewer: 'vera@aurora.example',
  auditor: 'otto@aurora.example',
  outsider: 'bea@borealis.example',
};
export const emailOf = (caller: Exclude<Caller, 'anonymous'>) => EMAILS[caller];

export interface Matrix {
  t: TestApp;
  ids: Record<string, string>;
  bearers: Record<Caller, string | null>;
  /** aurora's default project (the callers' own project) and another aurora project. */
  P: string;
  Q: string;
  /** The tenant Member ids of the callers made through the API. */
  memberIds: Record<'projectAdmin' | 'contributor' | 'projectViewer' | 'memberWithoutProject', string>;
  next(): number;
  /** Runs an operation that must succeed (setup), returning its data. */
  as<T = any>(caller: Caller, query: string, variables?: Record<string, unknown>): Promise<T>;
}

export const m = {} as Matrix;

export const ADD_MEMBER = `mutation($in: AddMemberInput!) { addMember(input: $in) { id } }`;
export const ADD_PROJECT_MEMBER = `mutation($in: AddProjectMemberInput!) { addProjectMember(input: $in) { id } }`;
export const CREATE_PROJECT = `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`;
export const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;

/** A new aurora MEMBER (by the tenant admin), optionally with a role in a project; returns the Member and
 * ProjectMember ids.
 */
export async function newMember(project?: {
  id: string;
  role: 'PROJECT_ADMIN' | 'CONTRIBUTOR' | 'VIEWER';
}): Promise<{ memberId: string; projectMemberId: string | null }> {
  const added = await m.as('tenantAdmin', ADD_MEMBER, {
    in: { tenantId: m.ids.Tenant, email: `person-${m.next()}@aurora.example`, role: 'MEMBER' },
  });
  if (!project) return { memberId: added.addMember.id, projectMemberId: null };
  const inProject = await m.as('tenantAdmin', ADD_PROJECT_MEMBER, {
    in: { projectId: project.id, memberId: added.addMember.id, role: project.role },
  });
  return { memberId: added.addMember.id, projectMemberId: inProject.addProjectMember.id };
}

/** Starts the app and makes the callers (beforeAll), closes it (afterAll). */
export function setupMatrix(): void {
  beforeAll(async () => {
    let serial = 0;
    m.next = () => ++serial;
    m.t = await startTestApp();
    m.ids = await m.t.idsOf('aurora-research');
    m.bearers = { anonymous: null } as Matrix['bearers'];
    m.as = async (caller, query, variables = {}) => {
      const res = await m.t.gql(m.bearers[caller], query, variables);
      if (res.body.errors) throw new Error(`${caller}: ${JSON.stringify(res.body.errors)}`);
      return res.body.data as never;
    };
    for (const caller of ['platformAdmin', 'tenantAdmin', 'viewer', 'auditor', 'outsider'] as const)
      m.bearers[caller] = await m.t.jwt(EMAILS[caller]);
    m.P = m.ids.Project!;
    m.Q = (
      await m.as('tenantAdmin', CREATE_PROJECT, {
        in: { tenantId: m.ids.Tenant, slug: 'matrix-other', name: 'Another project' },
      })
    ).createProject.id;
    m.memberIds = {} as Matrix['memberIds'];
    const projectRoles = {
      projectAdmin: 'PROJECT_ADMIN',
      contributor: 'CONTRIBUTOR',
      projectViewer: 'VIEWER',
      memberWithoutProject: null,
    } as const;
    for (const [caller, role] of Object.entries(projectRoles) as [
      keyof typeof projectRoles,
      (typeof projectRoles)[keyof typeof projectRoles],
    ][]) {
      const added = await m.as('tenantAdmin', ADD_MEMBER, {
        in: { tenantId: m.ids.Tenant, email: EMAILS[caller], role: 'MEMBER' },
      });
      m.memberIds[caller] = added.addMember.id;
      if (role)
        await m.as('tenantAdmin', ADD_PROJECT_MEMBER, {
          in: { projectId: m.P, memberId: added.addMember.id, role },
        });
      m.bearers[caller] = await m.t.jwt(EMAILS[caller]);
    }
    // The platform grants aurora a class that needs a grant, so its admins can pass it on to projects.
    await m.as(
      'platformAdmin',
      `mutation($t: ID!) { grantTenantPriorityClass(tenantId: $t, priorityClass: "inference-critical") { id } }`,
      { t: m.ids.Tenant },
    );
  }, 60_000);
  afterAll(async () => {
    await m.t?.close();
  });
}

/** One test per row and caller: allowed calls succeed; refused ones get exactly the expected code, no data,
 * and change nothing.
 */
export function runMatrix(rows: MatrixRow[]): void {
  const cases = rows.flatMap((row) =>
    CALLERS.map((caller) => ({ mutation: row.name, caller, expected: row.expect[caller] })),
  );
  it.each(cases)('$mutation as $caller → $expected', async ({ mutation, caller, expected }) => {
    const row = rows.find((r) => r.name === mutation)!;
    const variables = await row.variables();
    const before = await m.t.rowCounts({ ignoreAudit: true });
    const res = await m.t.gql(m.bearers[caller], row.query, variables);
    try {
      if (expected === 'OK') {
        expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
      } else {
        expect(codesOf(res), JSON.stringify(res.body)).toEqual([expected]);
        expect(res.body.data?.[mutation.split(' ')[0]!] ?? null).toBeNull();
        expect(await m.t.rowCounts({ ignoreAudit: true })).toEqual(before);
      }
    } finally {
      await row.after?.(res);
    }
  });
}
