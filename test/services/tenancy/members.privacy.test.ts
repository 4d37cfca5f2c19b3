import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../../schema/index.js';
import { type GqlResponse, startTestApp, type TestApp } from '../../helpers/harness.js';
import { selectionFor } from '../../helpers/schema-walk.js';

/**
 * addMember must not tell a tenant admin whether an address belongs to someone who already
 * exists with another tenant. Max (max@aurora.example, "Max Member") exists in Aurora;
 * max@nowhere-N.example exists nowhere. Borealis' admin adds both: every field of the answer,
 * the error of a repeat, the members list and the audit rows Borealis can read must be the
 * same once the one thing the admin typed differently (the domain) is set aside.
 */
let t: TestApp;
let borealis: Record<string, string>;
let bea: string;
const KNOWN = 'max@aurora.example';
/** A fresh unknown address per case, with the same part before the @ (the default name). */
let unknownSerial = 0;
let UNKNOWN = '';

const memberSelection = () => selectionFor(schema.getType('Member') as never, 3);

/** The answer with what necessarily differs set aside: the domain typed, row ids, times. */
function normalized(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replaceAll('aurora.example', 'DOMAIN')
      .replace(/nowhere-\d+\.example/g, 'DOMAIN')
      .replace(/"(id|targetId|joinedAt|createdAt|removedMemberId)":"[^"]*"/g, '"$1":"X"'),
  );
}

async function add(email: string, name?: string): Promise<GqlResponse<Record<string, any>>> {
  return t.gql(
    bea,
    `mutation($in: AddMemberInput!) { addMember(input: $in) ${memberSelection()} }`,
    { in: { tenantId: borealis.Tenant, email, role: 'VIEWER', ...(name ? { name } : {}) } },
    { 'x-request-id': 'add-member-privacy' },
  );
}

async function auditRowsFor(email: string): Promise<unknown[]> {
  const res = await t.gql(
    bea,
    `query($id: ID!) { auditEvents(tenantId: $id, last: 100) { edges { node ${selectionFor(schema.getType('AuditEvent') as never, 2)} } } }`,
    { id: borealis.Tenant },
  );
  expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
  return res.body
    .data!.auditEvents.edges.map((e: any) => e.node)
    .filter((n: any) => n.action.startsWith('member.') && JSON.stringify(n.input).includes(email));
}

async function removeBoth() {
  const res = await t.gql(
    bea,
    `query($id: ID!) { members(tenantId: $id, first: 100) { edges { node { id email } } } }`,
    { id: borealis.Tenant },
  );
  for (const edge of res.body.data!.members.edges) {
    if ([KNOWN, UNKNOWN].includes(edge.node.email))
      await t.gql(bea, `mutation($id: ID!) { removeMember(id: $id) { removedMemberId } }`, {
        id: edge.node.id,
      });
  }
}

beforeAll(async () => {
  t = await startTestApp();
  borealis = await t.idsOf('borealis-inference');
  bea = t.token('borealis-inference', 'TENANT_ADMIN');
});
afterAll(async () => {
  await t?.close();
});

describe('addMember reveals no one', () => {
  it.each([
    { typed: 'Typed By Bea', label: 'with a name typed in' },
    { typed: undefined, label: 'without a name' },
  ])(
    'the answer, a repeat, the members list and the audit rows are the same for a known-elsewhere and an unknown address ($label)',
    async ({ typed }) => {
      await removeBoth();
      UNKNOWN = `max@nowhere-${++unknownSerial}.example`;
      const known = await add(KNOWN, typed);
      const unknown = await add(UNKNOWN, typed);
      expect(known.body.errors, JSON.stringify(known.body)).toBeUndefined();
      expect(unknown.status).toBe(known.status);
      expect(normalized(known.body)).toEqual(normalized(unknown.body));
      expect(known.body.data!.addMember.name).toBe(typed ?? 'max');
      expect(JSON.stringify(known.body)).not.toContain('Max Member');

      const knownAgain = await add(KNOWN, typed);
      const unknownAgain = await add(UNKNOWN, typed);
      expect(knownAgain.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
      expect(normalized(knownAgain.body)).toEqual(normalized(unknownAgain.body));

      const list = await t.gql(
        bea,
        `query($id: ID!) { members(tenantId: $id, first: 100) { edges { node ${memberSelection()} } } }`,
        { id: borealis.Tenant },
      );
      const rows = list.body.data!.members.edges.map((e: any) => e.node);
      const knownRow = rows.find((r: any) => r.email === KNOWN);
      const unknownRow = rows.find((r: any) => r.email === UNKNOWN);
      expect(normalized(knownRow)).toEqual(normalized(unknownRow));
      expect(JSON.stringify(list.body)).not.toContain('Max Member');

      const [knownAudit, unknownAudit] = [await auditRowsFor(KNOWN), await auditRowsFor(UNKNOWN)];
      expect(knownAudit.length).toBeGreaterThan(0);
      expect(normalized(knownAudit.slice(-2))).toEqual(normalized(unknownAudit.slice(-2)));
    },
  );

  it('once the person accepts, the tenant sees their own name; no one else can accept for them', async () => {
    await removeBoth();
    const added = await add(KNOWN, 'Typed By Bea');
    const memberId = added.body.data!.addMember.id;
    expect(added.body.data!.addMember.accepted).toBe(false);
    const byAdmin = await t.gql(bea, `mutation($id: ID!) { acceptMembership(id: $id) { name } }`, {
      id: memberId,
    });
    expect(byAdmin.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const max = await t.jwt(KNOWN);
    const accepted = await t.gql(max, `mutation($id: ID!) { acceptMembership(id: $id) { name accepted } }`, {
      id: memberId,
    });
    expect(accepted.body.errors, JSON.stringify(accepted.body)).toBeUndefined();
    expect(accepted.body.data!.acceptMembership).toEqual({ name: 'Max Member', accepted: true });
    const seen = await t.gql(bea, `query($id: ID!) { node(id: $id) { ... on Member { name } } }`, {
      id: memberId,
    });
    expect(seen.body.data!.node.name).toBe('Max Member');
  });

  it('a person already in the tenant is still a CONFLICT, naming only the address typed', async () => {
    const again = await t.gql(bea, `mutation($in: AddMemberInput!) { addMember(input: $in) { id } }`, {
      in: { tenantId: borealis.Tenant, email: 'bob@borealis.example', role: 'VIEWER' },
    });
    expect(again.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(again.body.errors?.[0]?.message).toBe(
      'bob@borealis.example is already a member of this tenant; change their role instead.',
    );
  });
});
