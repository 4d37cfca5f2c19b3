// Quota requests: who may request, approve, reject, cancel and read them (every role,
// another tenant's admin, token scopes), the audit row each mutation writes (refused attempts too),
// bad input that changes nothing, and another tenant that never learns a request exists.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { announceCredentialsChanged } from '../../../src/events/bus.js';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { QuotaRequest } from '../../../src/persistence/governance/entities.js';
import { Tenant, User } from '../../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';

const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');
const FIELDS =
  'id status flavor resource nominal previousNominal justification queue { name } tenant { slug } requestedByName';
const REQUEST = `mutation($in: RequestQuotaChangeInput!) { requestQuotaChange(input: $in) { ${FIELDS} } }`;
const APPROVE = `mutation($id: ID!, $note: String) { approveQuotaRequest(id: $id, note: $note) { ${FIELDS} decisionNote decidedByName appliedAt } }`;
const REJECT = `mutation($id: ID!, $note: String!) { rejectQuotaRequest(id: $id, note: $note) { id status decisionNote } }`;
const CANCEL = `mutation($id: ID!) { cancelQuotaRequest(id: $id) { id status endedAt } }`;
const ONE = `query($id: ID!) { quotaRequest(id: $id) { ${FIELDS} } }`;
const LIST = `query($status: QuotaRequestStatus) { quotaRequests(first: 100, status: $status) { edges { node { id queue { name } tenant { slug } } } } }`;
const RECOMMEND = `query { quotaRecommendations(days: 14) { kind queue { name } } }`;

type Caller =
  | 'anonymous'
  | 'platformAdmin'
  | 'tenantAdmin'
  | 'member'
  | 'viewer'
  | 'auditor'
  | 'outsider'
  | 'scopedAdmin';
const CALLERS: Caller[] = [
  'anonymous',
  'platformAdmin',
  'tenantAdmin',
  'member',
  'viewer',
  'auditor',
  'outsider',
  'scopedAdmin',
];
type Expect = 'OK' | 'UNAUTHENTICATED' | 'FORBIDDEN' | 'NOT_FOUND';

describeEachDialect('quota requests: permissions and audit', (dialect) => {
  let t: TestApp;
  let queueId: string;
  let auroraId: string;
  let serial = 0;
  const bearer = {} as Record<Caller, string | null>;
  const em = () => systemEntityManager(t.app.orm).fork({ clear: true });

  beforeAll(async () => {
    t = await startTestApp({ dialect, governance: { quotaRequestIntervalMs: 3_600_000 } });
    const aurora = await em().findOneOrFail(Tenant, { slug: 'aurora-research' });
    auroraId = aurora.id;
    queueId = (await em().findOneOrFail(Queue, { tenant: aurora.id })).id;
    Object.assign(bearer, {
      anonymous: null,
      platformAdmin: t.token(null, 'PLATFORM_ADMIN'),
      tenantAdmin: t.token('aurora-research', 'TENANT_ADMIN'),
      member: t.token('aurora-research', 'MEMBER'),
      viewer: t.token('aurora-research', 'VIEWER'),
      auditor: t.token('aurora-research', 'AUDITOR'),
      outsider: t.token('borealis-inference', 'TENANT_ADMIN'),
    });
    // The tenant admin's own token, narrowed to reading: it may read requests, not make them.
    const minted = await expectOk(
      t,
      await t.jwt('ada@aurora.example'),
      `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret } }`,
      {
        in: { tenantId: enc('Tenant', aurora.id), name: 'read only', scopes: ['TENANT_READ', 'JOBS_READ'] },
      },
    );
    bearer.scopedAdmin = minted.createApiToken.secret;
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** A fresh PENDING request of aurora's admin (a nominal the queue does not have yet). */
  async function pending(): Promise<string> {
    const data = await expectOk(t, bearer.tenantAdmin, REQUEST, {
      in: {
        queueId: enc('Queue', queueId),
        flavor: 'h100-80g',
        nominal: 100 + ++serial,
        justification: 'more GPUs for the pretraining run',
      },
    });
    return data.requestQuotaChange.id;
  }
  /** The same, written straight to the database (the matrix needs one per case; the mutation itself is
   * tested above).
   */
  async function pendingRow(): Promise<string> {
    const e = em();
    const ada = await e.findOneOrFail(User, { email: 'ada@aurora.example' });
    const row = e.create(QuotaRequest, {
      tenant: auroraId,
      queue: queueId,
      flavor: 'h100-80g',
      resource: 'gpu',
      nominal: 100 + ++serial,
      previousNominal: null,
      startsAt: null,
      expiresAt: null,
      justification: 'matrix',
      status: 'PENDING',
      requestedBy: ada.id,
      decidedBy: null,
      decisionNote: null,
      decidedAt: null,
      appliedAt: null,
      endedAt: null,
    });
    await e.flush();
    return enc('QuotaRequest', row.id);
  }
  const requestInput = () => ({
    in: {
      queueId: enc('Queue', queueId),
      flavor: 'h100-80g',
      nominal: 200 + ++serial,
      justification: 'a bigger sweep',
    },
  });
  const onlyThese = (ok: Caller[], outsider: Expect = 'NOT_FOUND'): Record<Caller, Expect> =>
    Object.fromEntries(
      CALLERS.map((c) => [
        c,
        ok.includes(c)
          ? 'OK'
          : c === 'anonymous'
            ? 'UNAUTHENTICATED'
            : c === 'outsider'
              ? outsider
              : 'FORBIDDEN',
      ]),
    ) as Record<Caller, Expect>;

  const mutations: {
    name: string;
    action: string;
    query: string;
    variables: () => Promise<Record<string, unknown>>;
    expect: Record<Caller, Expect>;
  }[] = [
    {
      name: 'requestQuotaChange',
      action: 'quotaRequest.create',
      query: REQUEST,
      variables: async () => requestInput(),
      expect: onlyThese(['tenantAdmin']),
    },
    // Platform decisions: FORBIDDEN for everyone else, whatever the target (as platform configuration).
    {
      name: 'approveQuotaRequest',
      action: 'quotaRequest.approve',
      query: APPROVE,
      variables: async () => ({ id: await pendingRow() }),
      expect: onlyThese(['platformAdmin'], 'FORBIDDEN'),
    },
    {
      name: 'rejectQuotaRequest',
      action: 'quotaRequest.reject',
      query: REJECT,
      variables: async () => ({ id: await pendingRow(), note: 'not this quarter' }),
      expect: onlyThese(['platformAdmin'], 'FORBIDDEN'),
    },
    {
      name: 'cancelQuotaRequest',
      action: 'quotaRequest.cancel',
      query: CANCEL,
      variables: async () => ({ id: await pendingRow() }),
      expect: onlyThese(['tenantAdmin']),
    },
  ];

  it('every mutation × every caller: allowed ones succeed; refused ones get exactly their code, change nothing, and are audited', async () => {
    for (const row of mutations) {
      for (const caller of CALLERS) {
        const expected = row.expect[caller];
        const variables = await row.variables();
        const requestsBefore = await em().find(QuotaRequest, {}, { orderBy: { id: 'desc' }, limit: 3 });
        const countBefore = await em().count(QuotaRequest, {});
        const quotasBefore = (await em().findOneOrFail(Queue, { id: queueId })).quotas;
        const auditsBefore = await em().count(AuditEvent, { action: row.action });
        const res = await t.gql(bearer[caller], row.query, variables);
        const label = `${row.name} as ${caller}`;
        const audits = await em().find(
          AuditEvent,
          { action: row.action },
          { orderBy: { createdAt: 'desc', id: 'desc' }, populate: ['tenant'] },
        );
        if (expected === 'OK') {
          expect(res.body.errors, `${label}: ${JSON.stringify(res.body)}`).toBeUndefined();
          expect(audits.length, label).toBe(auditsBefore + 1);
          expect(audits[0]).toMatchObject({ outcome: 'SUCCESS', targetType: 'QuotaRequest' });
          expect(audits[0]!.tenant?.id, label).toBe(auroraId);
          continue;
        }
        expect(codesOf(res), `${label}: ${JSON.stringify(res.body)}`).toEqual([expected]);
        expect(res.body.data?.[row.name] ?? null, label).toBeNull();
        expect(await em().count(QuotaRequest, {}), label).toBe(countBefore);
        expect(
          (await em().find(QuotaRequest, {}, { orderBy: { id: 'desc' }, limit: 3 })).map((r) => [
            r.id,
            r.status,
            r.updatedAt.getTime(),
          ]),
          label,
        ).toEqual(requestsBefore.map((r) => [r.id, r.status, r.updatedAt.getTime()]));
        expect((await em().findOneOrFail(Queue, { id: queueId })).quotas, label).toEqual(quotasBefore);
        if (caller === 'anonymous') {
          expect(audits.length, label).toBe(auditsBefore);
          continue;
        }
        // A refused attempt is audited on its own: DENIED with its code; in aurora's log only when the
        // caller may see aurora.
        expect(audits.length, label).toBe(auditsBefore + 1);
        expect(audits[0], label).toMatchObject({ outcome: 'DENIED', errorCode: expected, targetId: null });
        if (caller === 'outsider') expect(audits[0]!.tenant, label).toBeNull();
      }
    }
  });

  it('reads: every aurora role and the platform see the request; the outsider gets NOT_FOUND exactly as for an unknown id; lists never show another tenant', async () => {
    const id = await pending();
    for (const caller of [
      'platformAdmin',
      'tenantAdmin',
      'member',
      'viewer',
      'auditor',
      'scopedAdmin',
    ] as const) {
      const res = await t.gql(bearer[caller], ONE, { id });
      expect(res.body.errors, `${caller}: ${JSON.stringify(res.body)}`).toBeUndefined();
      expect(res.body.data!.quotaRequest).toMatchObject({
        id,
        status: 'PENDING',
        queue: { name: 'aurora-training' },
        tenant: { slug: 'aurora-research' },
        requestedByName: 'Ada Admin',
      });
      const listed = await t.gql(bearer[caller], LIST, { status: 'PENDING' });
      expect(
        listed.body.data!.quotaRequests.edges.map((e: any) => e.node.id),
        caller,
      ).toContain(id);
    }
    expect(codesOf(await t.gql(null, ONE, { id }))).toEqual(['UNAUTHENTICATED']);
    const foreign = await t.gql(bearer.outsider, ONE, { id });
    const unknown = await t.gql(bearer.outsider, ONE, {
      id: enc('QuotaRequest', '0190f3c4-0000-7000-8000-000000000000'),
    });
    expect(codesOf(foreign)).toEqual(['NOT_FOUND']);
    expect(foreign.body).toEqual(unknown.body);
    // Through node(id) too.
    const node = await t.gql(bearer.outsider, `query($id: ID!) { node(id: $id) { id } }`, { id });
    expect(codesOf(node)).toEqual(['NOT_FOUND']);
    const theirs = await t.gql(bearer.outsider, LIST, {});
    expect(theirs.body.errors).toBeUndefined();
    expect(JSON.stringify(theirs.body)).not.toMatch(/aurora/);
    expect(theirs.body.data!.quotaRequests.edges).toEqual([]);
    // The requester's e-mail: tenant admins (members:read) only; a member gets null with FORBIDDEN.
    const email = `query($id: ID!) { quotaRequest(id: $id) { requestedByEmail } }`;
    expect((await expectOk(t, bearer.tenantAdmin, email, { id })).quotaRequest.requestedByEmail).toBe(
      'ada@aurora.example',
    );
    for (const caller of ['member', 'viewer', 'platformAdmin'] as const) {
      const res = await t.gql(bearer[caller], email, { id });
      expect(codesOf(res), caller).toEqual(['FORBIDDEN']);
      expect(res.body.data!.quotaRequest.requestedByEmail).toBeNull();
    }
  });

  it('recommendations: platform admins, tenant admins and auditors; members, viewers and a token without usage:read are FORBIDDEN', async () => {
    const expected: Record<Exclude<Caller, 'anonymous'>, Expect> = {
      platformAdmin: 'OK',
      tenantAdmin: 'OK',
      auditor: 'OK',
      outsider: 'OK',
      member: 'FORBIDDEN',
      viewer: 'FORBIDDEN',
      scopedAdmin: 'FORBIDDEN',
    };
    for (const [caller, code] of Object.entries(expected) as [Exclude<Caller, 'anonymous'>, Expect][]) {
      const res = await t.gql(bearer[caller], RECOMMEND);
      if (code === 'OK') expect(res.body.errors, `${caller}: ${JSON.stringify(res.body)}`).toBeUndefined();
      else expect(codesOf(res), caller).toEqual([code]);
    }
    expect(codesOf(await t.gql(null, RECOMMEND))).toEqual(['UNAUTHENTICATED']);
    expect(
      codesOf(await t.gql(bearer.platformAdmin, `query { quotaRecommendations(days: 0) { kind } }`)),
    ).toEqual(['BAD_USER_INPUT']);
  });

  it('bad input is BAD_USER_INPUT and writes nothing; another tenant’s queue is NOT_FOUND exactly as an unknown one', async () => {
    const now = t.now.value;
    const base = {
      queueId: enc('Queue', queueId),
      flavor: 'h100-80g',
      nominal: 40,
      justification: 'why not',
    };
    const bad: Record<string, unknown>[] = [
      { nominal: -1 },
      { nominal: (await em().findOneOrFail(Queue, { id: queueId })).quotas['h100-80g']!.gpu!.nominal }, // no change
      { flavor: 'no-such-flavor' },
      { justification: '   ' },
      { justification: 'x'.repeat(2001) },
      { expiresAt: new Date(now - 60_000).toISOString() },
      {
        startsAt: new Date(now + 7_200_000).toISOString(),
        expiresAt: new Date(now + 3_600_000).toISOString(),
      },
      { queueId: 'not-an-id' },
    ];
    const requests = await em().count(QuotaRequest, {});
    const quotas = (await em().findOneOrFail(Queue, { id: queueId })).quotas;
    for (const fields of bad) {
      const res = await t.gql(bearer.tenantAdmin, REQUEST, { in: { ...base, ...fields } });
      expect(codesOf(res), JSON.stringify(fields)).toEqual(['BAD_USER_INPUT']);
    }
    expect(await em().count(QuotaRequest, {})).toBe(requests);
    expect((await em().findOneOrFail(Queue, { id: queueId })).quotas).toEqual(quotas);
    const failed = await em().find(AuditEvent, {
      action: 'quotaRequest.create',
      outcome: 'FAILED',
      errorCode: 'BAD_USER_INPUT',
    });
    expect(failed.length).toBeGreaterThanOrEqual(7);

    const borealisQueue = await em().findOneOrFail(Queue, { name: 'borealis-serving' });
    const foreign = await t.gql(bearer.tenantAdmin, REQUEST, {
      in: { ...base, queueId: enc('Queue', borealisQueue.id) },
    });
    const unknown = await t.gql(bearer.tenantAdmin, REQUEST, {
      in: { ...base, queueId: enc('Queue', '0190f3c4-0000-7000-8000-000000000000') },
    });
    expect(codesOf(foreign)).toEqual(['NOT_FOUND']);
    expect(foreign.body).toEqual(unknown.body);
    // The outsider may not cancel aurora's request, nor learn it exists.
    const id = await pending();
    const cancel = await t.gql(bearer.outsider, CANCEL, { id });
    const cancelUnknown = await t.gql(bearer.outsider, CANCEL, {
      id: enc('QuotaRequest', '0190f3c4-0000-7000-8000-000000000000'),
    });
    expect(cancel.body).toEqual(cancelUnknown.body);
    expect(
      (await em().findOneOrFail(QuotaRequest, { id: Buffer.from(id, 'base64').toString().split(':')[1]! }))
        .status,
    ).toBe('PENDING');
  });

  it('conflicting states are CONFLICT and change nothing: approve twice, approve a cancelled or rejected one, cancel an active one; nobody approves their own request', async () => {
    const admin = bearer.platformAdmin;
    const approved = await pending();
    expect((await expectOk(t, admin, APPROVE, { id: approved })).approveQuotaRequest.status).toBe('ACTIVE');
    const quotas = (await em().findOneOrFail(Queue, { id: queueId })).quotas;
    expect(codesOf(await t.gql(admin, APPROVE, { id: approved }))).toEqual(['CONFLICT']);
    expect(codesOf(await t.gql(admin, REJECT, { id: approved, note: 'too late' }))).toEqual(['CONFLICT']);
    expect(codesOf(await t.gql(bearer.tenantAdmin, CANCEL, { id: approved }))).toEqual(['CONFLICT']);
    const cancelled = await pending();
    await expectOk(t, bearer.tenantAdmin, CANCEL, { id: cancelled });
    expect(codesOf(await t.gql(admin, APPROVE, { id: cancelled }))).toEqual(['CONFLICT']);
    const rejected = await pending();
    expect(codesOf(await t.gql(admin, REJECT, { id: rejected, note: ' ' }))).toEqual(['BAD_USER_INPUT']);
    await expectOk(t, admin, REJECT, { id: rejected, note: 'no capacity' });
    expect(codesOf(await t.gql(admin, APPROVE, { id: rejected }))).toEqual(['CONFLICT']);
    expect((await em().findOneOrFail(Queue, { id: queueId })).quotas).toEqual(quotas);
    const statuses = await em().find(
      QuotaRequest,
      {
        id: {
          $in: [approved, cancelled, rejected].map((g) => Buffer.from(g, 'base64').toString().split(':')[1]!),
        },
      },
      { orderBy: { id: 'asc' } },
    );
    expect(statuses.map((r) => r.status)).toEqual(['ACTIVE', 'CANCELLED', 'REJECTED']);
    const conflicts = await em().find(AuditEvent, {
      action: { $in: ['quotaRequest.approve', 'quotaRequest.reject', 'quotaRequest.cancel'] },
      outcome: 'FAILED',
      errorCode: 'CONFLICT',
    });
    expect(conflicts.length).toBeGreaterThanOrEqual(5);

    // Someone who is both aurora's admin and a platform admin asks another platform admin.
    const both = em();
    const ada = await both.findOneOrFail(User, { email: 'ada@aurora.example' });
    ada.isPlatformAdmin = true;
    await both.flush();
    announceCredentialsChanged(t.app.events, { userId: ada.id, at: t.now.value });
    try {
      const adaJwt = await t.jwt('ada@aurora.example');
      const own = await pending();
      expect(codesOf(await t.gql(adaJwt, APPROVE, { id: own }))).toEqual(['FORBIDDEN']);
      expect((await expectOk(t, admin, APPROVE, { id: own })).approveQuotaRequest.status).toBe('ACTIVE');
    } finally {
      ada.isPlatformAdmin = false;
      await both.flush();
      announceCredentialsChanged(t.app.events, { userId: ada.id, at: t.now.value });
    }
  });
});
