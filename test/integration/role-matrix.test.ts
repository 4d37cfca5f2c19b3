import { describe, expect, it } from 'vitest';
import { codesOf, type GqlResponse } from '../helpers/harness.js';
import { m, runMatrix, setupMatrix } from '../helpers/role-matrix.js';
import { PROJECT_ROWS, TENANT_ROWS } from '../helpers/role-matrix-rows.js';

/**
 * Who may call each platform- and tenant-level mutation (the project and job mutations are
 * in role-matrix-projects.test.ts; the callers and the rules in helpers/role-matrix*.ts).
 */
setupMatrix();

describe('role matrix: who may call each platform and tenant mutation', () => {
  runMatrix(TENANT_ROWS);

  it('covers every mutation in the schema (with role-matrix-projects)', async () => {
    const { schema } = await import('../../schema/index.js');
    const names = Object.keys(schema.getMutationType()!.getFields()).sort();
    const covered = [
      ...new Set([...TENANT_ROWS, ...PROJECT_ROWS].map((row) => row.name.split(' ')[0])),
    ].sort();
    expect(covered).toEqual(names);
  });

  it('refused attempts are audited as DENIED, under no tenant when the caller is an outsider', async () => {
    // Every page (a page holds at most 100 events; the matrix writes several hundred).
    const everyEvent = async (
      bearer: string | null,
      field: 'platformAuditEvents' | 'auditEvents',
      fields: string,
      tenantId?: string,
    ) => {
      const nodes: any[] = [];
      const codes: string[] = [];
      for (let after = ''; ; ) {
        const args: string = `${tenantId ? 'tenantId: $id, ' : ''}first: 100${after !== '' ? `, after: "${after}"` : ''}`;
        const res: GqlResponse<Record<string, any>> = await m.t.gql(
          bearer,
          `query${tenantId ? '($id: ID!)' : ''} { ${field}(${args}) { edges { node { ${fields} } } pageInfo { hasNextPage endCursor } } }`,
          tenantId ? { id: tenantId } : undefined,
        );
        const page: { edges: { node: any }[]; pageInfo: { hasNextPage: boolean; endCursor: string } } =
          res.body.data![field];
        nodes.push(...page.edges.map((e: any) => e.node));
        codes.push(...codesOf(res as GqlResponse));
        if (!page.pageInfo.hasNextPage) return { nodes, codes };
        after = page.pageInfo.endCursor;
      }
    };
    const platform = await everyEvent(
      m.bearers.platformAdmin,
      'platformAuditEvents',
      'action outcome errorCode actorEmail input',
    );
    const events = platform.nodes;
    expect(
      events.some(
        (e: any) =>
          e.outcome === 'DENIED' && e.actorEmail === 'bea@borealis.example' && e.action === 'project.create',
      ),
    ).toBe(true);
    // Without a break-glass grant the platform admin reads e-mails only on tenant-less records:
    // on aurora's own events (a successful change by its admin) the field is FORBIDDEN and null.
    expect(
      events.some(
        (e: any) => e.action === 'project.create' && e.outcome === 'SUCCESS' && e.actorEmail === null,
      ),
    ).toBe(true);
    expect(new Set(platform.codes)).toEqual(new Set(['FORBIDDEN']));
    // Read by the tenant admin: only admins (and each actor) see actors' e-mails.
    const auroraEvents = (
      await everyEvent(m.bearers.tenantAdmin, 'auditEvents', 'actorEmail outcome', m.ids.Tenant!)
    ).nodes;
    expect(auroraEvents.some((e: any) => e.actorEmail === 'bea@borealis.example')).toBe(false);
    expect(
      auroraEvents.some((e: any) => e.outcome === 'DENIED' && e.actorEmail === 'nemo@aurora.example'),
    ).toBe(true);
  });

  it('a tenant keeps its last admin', async () => {
    const res = await m.t.gql(
      m.bearers.tenantAdmin,
      `mutation($id: ID!) { changeMemberRole(id: $id, role: VIEWER) { id } }`,
      { id: m.ids.AdminMember },
    );
    expect(codesOf(res)).toEqual(['CONFLICT']);
  });

  it('field rules: member e-mails for admins and self only; audit log for auditors and admins', async () => {
    const q = `query($id: ID!) { members(tenantId: $id) { edges { node { email isViewer } } } }`;
    const asMember = await m.t.gql(m.bearers.contributor, q, { id: m.ids.Tenant });
    const nodes = asMember.body.data!.members.edges.map((e: any) => e.node);
    expect(nodes.filter((n: any) => n.email !== null)).toEqual([
      { email: 'cora@aurora.example', isViewer: true },
    ]);
    expect(new Set(codesOf(asMember))).toEqual(new Set(['FORBIDDEN']));
    const asAdmin = await m.t.gql(m.bearers.tenantAdmin, q, { id: m.ids.Tenant });
    expect(asAdmin.body.errors).toBeUndefined();
    const audit = `query($id: ID!) { auditEvents(tenantId: $id) { edges { node { action } } } }`;
    expect(codesOf(await m.t.gql(m.bearers.viewer, audit, { id: m.ids.Tenant }))).toEqual(['FORBIDDEN']);
    expect((await m.t.gql(m.bearers.auditor, audit, { id: m.ids.Tenant })).body.errors).toBeUndefined();
  });
});
