import { describe, expect, it } from 'vitest';
import { codesOf } from '../helpers/harness.js';
import { m, newMember, runMatrix, SUBMIT, setupMatrix } from '../helpers/role-matrix.js';
import { PROJECT_ROWS } from '../helpers/role-matrix-rows.js';

/**
 * Who may call each project and job mutation, against the callers' own project P and
 * another project Q of the same tenant (the rules are in helpers/role-matrix-rows.ts).
 */
setupMatrix();

describe('role matrix: who may call each project and job mutation, in their project and in another', () => {
  runMatrix(PROJECT_ROWS);

  it('anyone may leave a project themself; afterwards they no longer submit to it', async () => {
    const { memberId, projectMemberId } = await newMember({ id: m.P, role: 'CONTRIBUTOR' });
    const email = (
      await m.as('tenantAdmin', `query($id: ID!) { node(id: $id) { ... on Member { email } } }`, {
        id: memberId,
      })
    ).node.email as string;
    const leaver = await m.t.jwt(email);
    const submit = (name: string) =>
      m.t.gql(leaver, SUBMIT, {
        in: {
          queueId: m.ids.Queue,
          projectId: m.P,
          name,
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 60,
        },
      });
    expect((await submit('before leaving')).body.errors).toBeUndefined();
    const left = await m.t.gql(
      leaver,
      `mutation($id: ID!) { removeProjectMember(id: $id) { removedProjectMemberId } }`,
      { id: projectMemberId },
    );
    expect(left.body.errors, JSON.stringify(left.body)).toBeUndefined();
    expect(left.body.data!.removeProjectMember.removedProjectMemberId).toBe(projectMemberId);
    const before = await m.t.rowCounts({ ignoreAudit: true });
    expect(codesOf(await submit('after leaving'))).toEqual(['FORBIDDEN']);
    expect(await m.t.rowCounts({ ignoreAudit: true })).toEqual(before);
  });

  it('a read-only tenant role (VIEWER) cannot be made a project CONTRIBUTOR: BAD_USER_INPUT, nothing written', async () => {
    const vera = (
      await m.as(
        'tenantAdmin',
        `query($id: ID!) { members(tenantId: $id, first: 50) { edges { node { id email role } } } }`,
        { id: m.ids.Tenant },
      )
    ).members.edges
      .map((e: any) => e.node)
      .find((n: any) => n.email === 'vera@aurora.example');
    const before = await m.t.rowCounts({ ignoreAudit: true });
    const res = await m.t.gql(
      m.bearers.tenantAdmin,
      `mutation($in: AddProjectMemberInput!) { addProjectMember(input: $in) { id } }`,
      { in: { projectId: m.Q, memberId: vera.id, role: 'CONTRIBUTOR' } },
    );
    expect(codesOf(res)).toEqual(['BAD_USER_INPUT']);
    expect(await m.t.rowCounts({ ignoreAudit: true })).toEqual(before);
  });
});
