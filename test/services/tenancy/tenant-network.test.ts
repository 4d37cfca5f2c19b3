import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { Tenant } from '../../../src/persistence/tenancy/entities.js';
import { normaliseCidr } from '../../../src/services/tenancy/tenant-network.js';
import { describeEachDialect } from '../../helpers/database.js';
import {
  codesOf,
  expectOk,
  expectRefusedUnchanged,
  startTestApp,
  type TestApp,
} from '../../helpers/harness.js';

let t: TestApp;
let aurora: Record<string, string>;
let platform: string;
let ada: string;
let max: string;
let otto: string;
let bea: string;

const SET = `mutation($t: ID!, $c: [String!]) { setTenantEgressAllowlist(tenantId: $t, cidrs: $c) { egressAllowlist } }`;
const READ = `{ tenant(slug: "aurora-research") { egressAllowlist } }`;

/** The stored column, read past the graph: a refused change must leave it as it was. */
async function stored(): Promise<string[] | null> {
  const tenant = await t.app.orm.em
    .fork()
    .findOneOrFail(Tenant, { slug: 'aurora-research' }, { filters: false });
  return tenant.egressAllowlist ?? null;
}

async function expectRefusedKept(bearer: string, variables: Record<string, unknown>, code: string) {
  const before = await stored();
  const res = await expectRefusedUnchanged(t, bearer, SET, variables, code);
  expect(await stored()).toEqual(before);
  return res.body.errors![0]!;
}

describeEachDialect("a tenant's egress allowlist", (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    platform = t.token(null, 'PLATFORM_ADMIN');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
    max = t.token('aurora-research', 'MEMBER');
    otto = t.token('aurora-research', 'AUDITOR');
    bea = t.token('borealis-inference', 'TENANT_ADMIN');
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is unrestricted (null) until a platform admin sets it', async () => {
    expect((await expectOk(t, max, READ)).tenant.egressAllowlist).toBeNull();
  });

  it('a platform admin sets it; it is stored in canonical form, read by members, audited before and after, and announced to the backend', async () => {
    const announce = vi.spyOn(t.app.scheduler, 'announce');
    const set = await expectOk(t, platform, SET, {
      t: aurora.Tenant,
      c: [' 10.0.0.0/8', '2001:DB8:0::/32', '192.0.2.7', '10.0.0.0/8', '2001:db8::1'],
    });
    const expected = ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7/32', '2001:db8::1/128'];
    expect(set.setTenantEgressAllowlist.egressAllowlist).toEqual(expected);
    expect((await expectOk(t, max, READ)).tenant.egressAllowlist).toEqual(expected);
    expect(await stored()).toEqual(expected);
    expect(announce).toHaveBeenCalledWith({ kind: 'config' });

    await expectOk(t, platform, SET, { t: aurora.Tenant, c: ['10.0.0.0/8'] });
    const log = await expectOk(
      t,
      otto,
      `query($id: ID!) { auditEvents(tenantId: $id, last: 50) { edges { node { action outcome input } } } }`,
      { id: aurora.Tenant },
    );
    const events = log.auditEvents.edges
      .map((e: { node: any }) => e.node)
      .filter((n: { action: string }) => n.action === 'tenant.setEgressAllowlist');
    expect(events.map((e: { outcome: string }) => e.outcome)).toEqual(['SUCCESS', 'SUCCESS']);
    expect(events[0].input).toMatchObject({ before: null, after: expected });
    expect(events[1].input).toMatchObject({ before: expected, after: ['10.0.0.0/8'] });
  });

  it('tenant admins and members are refused (FORBIDDEN), nothing changed, nothing announced', async () => {
    const announce = vi.spyOn(t.app.scheduler, 'announce');
    for (const bearer of [ada, max, otto]) {
      await expectRefusedKept(bearer, { t: aurora.Tenant, c: null }, 'FORBIDDEN');
      await expectRefusedKept(bearer, { t: aurora.Tenant, c: ['0.0.0.0/0'] }, 'FORBIDDEN');
    }
    expect(announce).not.toHaveBeenCalled();
    expect(await stored()).toEqual(['10.0.0.0/8']);
  });

  it("another tenant's admin gets the same answer for Aurora's id as for an id that does not exist", async () => {
    const missing = Buffer.from(`Tenant:${randomUUID()}`).toString('base64');
    const theirs = await expectRefusedKept(bea, { t: aurora.Tenant, c: [] }, 'FORBIDDEN');
    const none = await expectRefusedKept(bea, { t: missing, c: [] }, 'FORBIDDEN');
    expect(theirs).toEqual(none);
    // A platform admin is told the tenant does not exist.
    await expectRefusedKept(platform, { t: missing, c: [] }, 'NOT_FOUND');
  });

  it.each([
    [
      'host bits below the prefix',
      '10.0.0.1/8',
      /"10.0.0.1\/8" has address bits set below its \/8 prefix: write 10.0.0.0\/8/,
    ],
    ['not an address', 'example.com', /"example.com" is not an IPv4 or IPv6 address or CIDR/],
    ['a prefix too long', '10.0.0.0/33', /"10.0.0.0\/33" has a malformed prefix length \(0 to 32 for IPv4\)/],
    ['an IPv6 prefix too long', '2001:db8::/129', /0 to 128 for IPv6/],
    ['an IPv6 zone', 'fe80::1%eth0', /"fe80::1%eth0" is not an IPv4 or IPv6/],
    ['an IPv4 address with leading zeros', '010.0.0.0/8', /not an IPv4 or IPv6/],
    ['an empty entry', '', /is not an IPv4 or IPv6/],
  ])('%s is refused (BAD_USER_INPUT naming the entry), nothing changed', async (_what, entry, message) => {
    const error = await expectRefusedKept(
      platform,
      { t: aurora.Tenant, c: ['192.0.2.0/24', entry] },
      'BAD_USER_INPUT',
    );
    expect(error.message).toMatch(message);
    expect(error.extensions).toMatchObject({ field: 'cidrs', entry });
  });

  it('more than 64 entries are refused', async () => {
    await expectRefusedKept(
      platform,
      { t: aurora.Tenant, c: Array.from({ length: 65 }, (_, i) => `10.${i}.0.0/16`) },
      'BAD_USER_INPUT',
    );
    await expectOk(t, platform, SET, {
      t: aurora.Tenant,
      c: Array.from({ length: 64 }, (_, i) => `10.${i}.0.0/16`),
    });
    expect(await stored()).toHaveLength(64);
  });

  it('[] allows nothing but DNS; null clears it (unrestricted)', async () => {
    expect(
      (await expectOk(t, platform, SET, { t: aurora.Tenant, c: [] })).setTenantEgressAllowlist
        .egressAllowlist,
    ).toEqual([]);
    expect(await stored()).toEqual([]);
    expect(
      (await expectOk(t, platform, SET, { t: aurora.Tenant, c: null })).setTenantEgressAllowlist
        .egressAllowlist,
    ).toBeNull();
    expect(await stored()).toBeNull();
    expect(
      (
        await expectOk(
          t,
          platform,
          `mutation($t: ID!) { setTenantEgressAllowlist(tenantId: $t) { egressAllowlist } }`,
          { t: aurora.Tenant },
        )
      ).setTenantEgressAllowlist.egressAllowlist,
    ).toBeNull();
  });

  it("outsiders do not read a tenant's list", async () => {
    await expectOk(t, platform, SET, { t: aurora.Tenant, c: ['10.0.0.0/8'] });
    const res = await t.gql(bea, READ);
    expect(JSON.stringify(res.body.data ?? null)).not.toContain('10.0.0.0/8');
    expect(codesOf(res).every((c) => c === 'NOT_FOUND' || c === 'FORBIDDEN')).toBe(true);
  });
});

it('normaliseCidr masks by whole prefix and writes IPv6 per RFC 5952', () => {
  expect(normaliseCidr('10.1.2.128/25')).toEqual({ ok: true, cidr: '10.1.2.128/25' });
  expect(normaliseCidr('10.1.2.129/25').ok).toBe(false);
  expect(normaliseCidr('2001:0db8:abcd:0012:0000:0000:0000:0000/63')).toEqual({
    ok: true,
    cidr: '2001:db8:abcd:12::/63',
  });
  expect(normaliseCidr('2001:db8:abcd:13::/63').ok).toBe(false);
  expect(normaliseCidr('::/0')).toEqual({ ok: true, cidr: '::/0' });
  expect(normaliseCidr('0.0.0.0/0')).toEqual({ ok: true, cidr: '0.0.0.0/0' });
  expect(normaliseCidr('1.2.3.4/32/1').ok).toBe(false);
});
