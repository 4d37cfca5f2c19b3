import { type Client, createClient } from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { schema } from '../../schema/index.js';
import { AuditEvent } from '../../src/persistence/audit/entities.js';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { QuotaRequest } from '../../src/persistence/governance/entities.js';
import { Job } from '../../src/persistence/jobs/entities.js';
import { BreakGlassGrant, ProjectMembership } from '../../src/persistence/tenancy/access-entities.js';
import { ApiToken, Membership, Project, Tenant } from '../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../helpers/database.js';
import { codesOf, startTestApp, type TestApp } from '../helpers/harness.js';
import {
  allStrings,
  buildArgs,
  idPathsOf,
  operationFor,
  rootFields,
  selectionFor,
  subscriptionFields,
} from '../helpers/schema-walk.js';

/**
 * Generated from the schema: every query field and mutation that takes an ID (anywhere
 * in its arguments) is called by tenant B with each of tenant A's IDs. B must get
 * NOT_FOUND or FORBIDDEN, learn nothing of A, and change nothing. A new field is
 * covered the day it is added.
 */
const VICTIMS = [
  'Tenant',
  'Project',
  'Member',
  'AdminMember',
  'ProjectMember',
  'ApiToken',
  'AuditEvent',
  'BreakGlassGrant',
  'Queue',
  'Job',
  'InferenceService',
];

/**
 * Whether an ID of this victim's type is what the argument at this path asks for:
 * `projectId`, `defaultProjectId` → Project; a bare `id`, or a name no victim type ends it → any.
 */
function reachesDatabase(idPath: string, victim: string): boolean {
  const base = idPath.split('.').at(-1)!.replace(/Ids?$/, '').toLowerCase();
  const typeOf = (v: string) => (v === 'AdminMember' ? 'member' : v.toLowerCase());
  // Longest type name first: `projectMemberId` asks for a ProjectMember, not a Member.
  const named = VICTIMS.map(typeOf)
    .sort((a, b) => b.length - a.length)
    .find((type) => base.endsWith(type));
  return named === undefined || named === typeOf(victim);
}

describeEachDialect('cross-tenant matrix', (dialect) => {
  let t: TestApp;
  let victimIds: Record<string, string>;
  let attackers: { name: string; bearer: string }[];
  /** Strings that would betray tenant A if they appeared in any answer to B. */
  let secrets: string[];

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    victimIds = await t.idsOf('aurora-research');
    await t.idsOf('borealis-inference');
    attackers = [
      { name: 'borealis admin (JWT session)', bearer: await t.jwt('bea@borealis.example') },
      { name: 'borealis admin (API token)', bearer: t.token('borealis-inference', 'TENANT_ADMIN') },
      { name: 'borealis member (API token)', bearer: t.token('borealis-inference', 'MEMBER') },
    ];
    const rawIds = Object.entries(victimIds)
      .filter(([k]) => k !== 'slug')
      .map(([, v]) => Buffer.from(v, 'base64').toString().split(':')[1]!);
    secrets = ['aurora', 'Aurora', 'llm-pretraining', ...rawIds, ...Object.values(victimIds)];
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const cases: { kind: 'query' | 'mutation'; field: string; idPath: string; victim: string }[] = [];
  for (const kind of ['query', 'mutation'] as const) {
    for (const field of rootFields(schema, kind)) {
      const idPaths = idPathsOf(field);
      const stringSlug = field.args.some((a) => a.name === 'slug');
      for (const path of idPaths) {
        for (const victim of VICTIMS) {
          // Every pairing on SQLite. On PostgreSQL, the pairings that reach the database: an ID
          // of the type the argument names (a wrong type is refused by decodeId before any
          // query, the same on every database), and every type for a bare `id`.
          if (dialect === 'postgresql' && !reachesDatabase(path.join('.'), victim)) continue;
          cases.push({ kind, field: field.name, idPath: path.join('.'), victim });
        }
      }
      if (stringSlug) cases.push({ kind, field: field.name, idPath: 'slug', victim: 'slug' });
    }
  }

  it('covers every ID-taking root field of the schema', () => {
    const covered = new Set(cases.map((c) => `${c.kind}.${c.field}`));
    for (const kind of ['query', 'mutation'] as const) {
      for (const field of rootFields(schema, kind)) {
        if (idPathsOf(field).length > 0) expect(covered.has(`${kind}.${field.name}`)).toBe(true);
      }
    }
    expect(cases.length).toBeGreaterThan(50);
  });

  it.each(cases)(
    "$kind $field with A's $victim at $idPath",
    async ({ kind, field: fieldName, idPath, victim }) => {
      const field = rootFields(schema, kind).find((f) => f.name === fieldName)!;
      const args = buildArgs(field, (path) =>
        path.join('.') === idPath ? victimIds[victim]! : victimIds.Tenant!,
      );
      if (idPath === 'slug') args.slug = 'aurora-research';
      const { query, variables } = operationFor(kind, field, args, selectionFor(field.type, 3));
      // The attackers probe at once (as they could); the counts around all three prove none wrote anything.
      const before = await t.rowCounts({ ignoreAudit: true });
      const answers = await Promise.all(
        attackers.map(async (attacker) => ({
          attacker,
          res: await t.gql(attacker.bearer, query, variables),
        })),
      );
      for (const { attacker, res } of answers) {
        const codes = codesOf(res);
        expect(codes.length, `${attacker.name}: ${JSON.stringify(res.body)}`).toBeGreaterThan(0);
        for (const code of codes)
          expect(['NOT_FOUND', 'FORBIDDEN'], `${attacker.name}: ${JSON.stringify(res.body)}`).toContain(code);
        expect(res.body.data?.[fieldName] ?? null).toBeNull();
        const text = JSON.stringify(res.body);
        for (const secret of secrets)
          expect(text.includes(secret), `${attacker.name} learned "${secret}": ${text}`).toBe(false);
      }
      expect(await t.rowCounts({ ignoreAudit: true })).toEqual(before);
    },
  );

  it('NOT_FOUND for a foreign ID reads exactly like NOT_FOUND for an ID that never existed', async () => {
    const ghost = Buffer.from('Project:01900000-0000-7000-8000-000000000000').toString('base64');
    const bearer = attackers[0]!.bearer;
    const foreign = await t.gql(bearer, `query($id: ID!) { node(id: $id) { id } }`, {
      id: victimIds.Project,
    });
    const missing = await t.gql(bearer, `query($id: ID!) { node(id: $id) { id } }`, { id: ghost });
    expect(foreign.status).toBe(missing.status);
    expect(foreign.body).toEqual(missing.body);
  });

  it('argument-free queries show B nothing of A', async () => {
    for (const field of rootFields(schema, 'query')) {
      if (field.args.some((a) => a.type.toString().endsWith('!'))) continue;
      const { query, variables } = operationFor('query', field, {}, selectionFor(field.type, 4));
      for (const attacker of attackers) {
        const res = await t.gql(attacker.bearer, query, variables);
        const text = JSON.stringify(res.body);
        for (const secret of secrets)
          expect(text.includes(secret), `${field.name} leaked "${secret}" to ${attacker.name}`).toBe(false);
      }
    }
  });

  it("every ID-taking subscription with A's IDs: B gets NOT_FOUND or FORBIDDEN (as for an ID that never existed) and no event", async () => {
    const bearer = t.token('borealis-inference', 'TENANT_ADMIN');
    /** The first answer within a second: an error's codes, an event, or nothing. */
    const firstAnswer = async (query: string, variables: Record<string, unknown>) => {
      const client = createClient({
        url: t.url.replace('http', 'ws'),
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${bearer}` },
        lazy: true,
        retryAttempts: 0,
      });
      try {
        return await new Promise<{ kind: string; codes: string[]; text: string }>((resolve) => {
          const timer = setTimeout(() => resolve({ kind: 'silent', codes: [], text: '' }), 1000);
          client.subscribe(
            { query, variables },
            {
              next: (message) => {
                clearTimeout(timer);
                const codes = (message.errors ?? []).map((e) => String(e.extensions?.code));
                resolve({ kind: message.data ? 'event' : 'error', codes, text: JSON.stringify(message) });
              },
              error: (error) => {
                clearTimeout(timer);
                const list = Array.isArray(error) ? error : [error];
                resolve({
                  kind: 'error',
                  codes: list.map((e) => String((e as { extensions?: { code?: unknown } }).extensions?.code)),
                  text: JSON.stringify(list),
                });
              },
              complete: () => undefined,
            },
          );
        });
      } finally {
        await client.dispose();
      }
    };
    let probed = 0;
    for (const field of subscriptionFields(schema)) {
      for (const path of idPathsOf(field)) {
        for (const victim of VICTIMS.filter((v) => reachesDatabase(path.join('.'), v))) {
          const typeName = victim === 'AdminMember' ? 'Member' : victim;
          const ghost = Buffer.from(`${typeName}:01900000-0000-7000-8000-000000000000`).toString('base64');
          const probe = (id: string) => {
            const args = buildArgs(field, (p) => (p.join('.') === path.join('.') ? id : victimIds.Tenant!));
            const op = operationFor('subscription' as 'query', field, args, selectionFor(field.type, 3));
            return firstAnswer(op.query, op.variables);
          };
          const [foreign, missing] = [await probe(victimIds[victim]!), await probe(ghost)];
          const what = `${field.name} with A's ${victim} at ${path.join('.')}: ${foreign.text}`;
          expect(foreign.kind, what).not.toBe('event');
          expect(foreign.kind, what).toBe(missing.kind);
          for (const code of foreign.codes) expect(['NOT_FOUND', 'FORBIDDEN'], what).toContain(code);
          for (const secret of secrets) expect(foreign.text.includes(secret), what).toBe(false);
          probed++;
        }
      }
    }
    expect(probed).toBeGreaterThan(3);
  }, 120_000);

  it('while A reclaims GPUs from B, no string in any response or subscription event B sees names anything of A', async () => {
    const bAdmin = t.token('borealis-inference', 'TENANT_ADMIN');
    const bMember = t.token('borealis-inference', 'MEMBER');
    const aMember = t.token('aurora-research', 'MEMBER');
    const borealis = await t.idsOf('borealis-inference');
    const seen: { what: string; value: unknown }[] = [];
    const clients: Client[] = [];
    const disposers: (() => void)[] = [];
    const subscribe = (field: string, variables: Record<string, unknown>) => {
      const def = subscriptionFields(schema).find((f) => f.name === field)!;
      const args = def.args.map((a) => `${a.name}: $${a.name}`).join(', ');
      const vars = def.args.map((a) => `$${a.name}: ${a.type.toString()}`).join(', ');
      const client = createClient({
        url: t.url.replace('http', 'ws'),
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${bAdmin}` },
        lazy: true,
        retryAttempts: 0,
      });
      clients.push(client);
      disposers.push(
        // Depth 3 reaches every string of the event itself (pending reason, tenant event); the rows behind
        // it are read below.
        client.subscribe(
          { query: `subscription(${vars}) { ${field}(${args}) ${selectionFor(def.type, 3)} }`, variables },
          {
            next: (message) => seen.push({ what: field, value: message }),
            error: (error) =>
              seen.push({ what: `${field} error`, value: error instanceof Error ? error.message : error }),
            complete: () => undefined,
          },
        ),
      );
    };
    try {
      // Every subscription B can open on its own things, with the deepest selection the schema allows.
      // quotaRequestUpdates is the platform admins' stream: B is refused it
      // (test/services/governance/quota-requests.flow.test.ts).
      expect(
        subscriptionFields(schema)
          .map((f) => f.name)
          .sort(),
      ).toEqual([
        'auditEventRecorded',
        'jobLogs',
        'jobPosition',
        'jobUpdated',
        'queueUpdated',
        'quotaRequestUpdates',
        'serviceUpdated',
        'tenantEvents',
      ]);
      subscribe('tenantEvents', { tenantId: borealis.Tenant });
      subscribe('queueUpdated', { id: borealis.Queue });
      subscribe('auditEventRecorded', { tenantId: borealis.Tenant });
      subscribe('serviceUpdated', { id: borealis.InferenceService });
      await new Promise((r) => setTimeout(r, 300));
      // B borrows more H100s than it owns (more jobs than fit, so a reclaim must preempt).
      const submit = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
      const borrowers: string[] = [];
      for (let i = 1; i <= 5; i++) {
        const res = await t.gql(bMember, submit, {
          in: {
            queueId: borealis.Queue,
            name: `b-borrower-${i}`,
            priorityClass: 'experiment',
            podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
            expectedDurationSeconds: 1e6,
          },
        });
        expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
        borrowers.push(res.body.data!.submitJob.id);
        subscribe('jobPosition', { id: res.body.data!.submitJob.id });
        subscribe('jobUpdated', { id: res.body.data!.submitJob.id });
        subscribe('jobLogs', { id: res.body.data!.submitJob.id });
      }
      await waitFor(async () => {
        const q = await t.gql(
          bAdmin,
          `query($id: ID!) { node(id: $id) { ... on Queue { usage { flavor borrowed } } } }`,
          { id: borealis.Queue },
        );
        return (q.body.data?.node?.usage ?? []).some(
          (u: { flavor: string; borrowed: number }) => u.flavor === 'h100-80g' && u.borrowed > 0,
        );
      });
      const reclaimer = await t.gql(aMember, submit, {
        in: {
          queueId: victimIds.Queue,
          name: 'aurora-secret-reclaimer',
          priorityClass: 'training',
          podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e6,
        },
      });
      expect(reclaimer.body.errors, JSON.stringify(reclaimer.body)).toBeUndefined();
      // A asks for more quota and a platform admin approves it: B hears none of it (QUOTA_REQUEST,
      // QUOTA_CHANGED are A's).
      const asked = await t.gql(
        t.token('aurora-research', 'TENANT_ADMIN'),
        `mutation($in: RequestQuotaChangeInput!) { requestQuotaChange(input: $in) { id } }`,
        {
          in: {
            queueId: victimIds.Queue,
            flavor: 'h100-80g',
            nominal: 17,
            expiresAt: new Date(t.now.value + 3_600_000).toISOString(),
            justification: 'aurora-secret-justification',
          },
        },
      );
      expect(asked.body.errors, JSON.stringify(asked.body)).toBeUndefined();
      const approval = await t.gql(
        t.token(null, 'PLATFORM_ADMIN'),
        `mutation($id: ID!) { approveQuotaRequest(id: $id) { id } }`,
        { id: asked.body.data!.requestQuotaChange.id },
      );
      expect(approval.body.errors, JSON.stringify(approval.body)).toBeUndefined();
      await waitFor(
        () =>
          Promise.resolve(
            seen.some((s) => s.what === 'tenantEvents' && JSON.stringify(s.value).includes('PREEMPTED')),
          ),
        20_000,
      );
      const preempted = seen
        .map(
          (s) =>
            (s.value as { data?: { tenantEvents?: { kind: string; jobId: string } } }).data?.tenantEvents,
        )
        .find((e) => e?.kind === 'PREEMPTED')!;
      // B must have seen its preempted job pending (with its pending reason) on the position stream.
      const preemptedPending = (s: { what: string; value: unknown }) => {
        const update = (
          s.value as {
            data?: {
              jobPosition?: {
                state: string;
                job: { id: string; preemptionCount: number };
                pendingReason: unknown;
              };
            };
          }
        ).data?.jobPosition;
        return (
          s.what === 'jobPosition' &&
          update?.state === 'PENDING' &&
          update.job.id === preempted.jobId &&
          update.job.preemptionCount >= 1 &&
          update.pendingReason !== null
        );
      };
      await waitFor(() => Promise.resolve(seen.some(preemptedPending)), 30_000);
      await new Promise((r) => setTimeout(r, 500));
      const reads: { what: string; query: string; variables?: Record<string, unknown>; bearer: string }[] =
        [];
      const jobSelection = (depth: number) => selectionFor(schema.getType('Job') as never, depth);
      for (const bearer of [bAdmin, bMember]) {
        reads.push({
          what: 'node(job)',
          query: `query($id: ID!) { node(id: $id) { ... on Job ${jobSelection(4)} } }`,
          variables: { id: preempted.jobId },
          bearer,
        });
        reads.push({
          what: 'jobs',
          query: `query($t: ID!) { jobs(tenantId: $t, last: 100) { edges { node ${jobSelection(3)} } } }`,
          variables: { t: borealis.Tenant },
          bearer,
        });
      }
      reads.push({
        what: 'node(queue)',
        query: `query($id: ID!) { node(id: $id) { ... on Queue ${selectionFor(schema.getType('Queue') as never, 4)} } }`,
        variables: { id: borealis.Queue },
        bearer: bAdmin,
      });
      reads.push({
        what: 'tenant',
        query: `query { tenant(slug: "borealis-inference") ${selectionFor(schema.getType('Tenant') as never, 4)} }`,
        bearer: bAdmin,
      });
      reads.push({
        what: 'previewJob',
        query: `mutation($in: SubmitJobInput!) { previewJob(input: $in) ${selectionFor(schema.getMutationType()!.getFields().previewJob!.type, 4)} }`,
        variables: {
          in: {
            queueId: borealis.Queue,
            name: 'preview',
            priorityClass: 'inference-critical',
            podSets: [{ count: 4, gpusPerPod: 8, flavors: ['h100-80g'] }],
          },
        },
        bearer: bAdmin,
      });
      for (const field of rootFields(schema, 'query')) {
        if (field.args.some((a) => a.type.toString().endsWith('!'))) continue;
        reads.push({
          what: field.name,
          ...operationFor('query', field, {}, selectionFor(field.type, 3)),
          bearer: bAdmin,
        });
      }
      for (const read of reads)
        seen.push({ what: read.what, value: (await t.gql(read.bearer, read.query, read.variables)).body });
      const victimView = seen.find(
        (s) => s.what === 'node(job)' && JSON.stringify(s.value).includes('"preemptionCount":1'),
      );
      expect(victimView, 'B reads its preempted job').toBeDefined();
      expect(seen.some((s) => s.what === 'jobPosition')).toBe(true);

      const secretsOfA = await everythingOf('aurora-research');
      expect(secretsOfA).toContain('aurora-secret-reclaimer');
      for (const { what, value } of seen) {
        for (const text of allStrings(value)) {
          for (const secret of secretsOfA)
            expect(text.includes(secret), `B saw "${secret}" of A in ${what}: ${text}`).toBe(false);
        }
      }
    } finally {
      for (const dispose of disposers) dispose();
      for (const client of clients) await client.dispose();
    }
  }, 240_000);

  /** Every identifying string of a tenant, read from the database: ids (raw and global), slug, names,
   * e-mails.
   */
  async function everythingOf(slug: string): Promise<string[]> {
    const em = t.app.orm.em.fork({ clear: true });
    em.setFilterParams(TENANT_FILTER, { all: true });
    const tenant = await em.findOneOrFail(Tenant, { slug });
    const out = new Set<string>([tenant.slug, tenant.name, 'aurora', 'Aurora']);
    const add = (type: string, id: string, ...texts: (string | null | undefined)[]) => {
      out.add(id);
      out.add(Buffer.from(`${type}:${id}`).toString('base64'));
      for (const text of texts) if (text) out.add(text);
    };
    add('Tenant', tenant.id);
    for (const m of await em.find(Membership, { tenant: tenant.id }, { populate: ['user'] })) {
      add('Member', m.id);
      add('User', m.user.id, m.user.name, m.user.email);
    }
    for (const p of await em.find(Project, { tenant: tenant.id })) add('Project', p.id, p.slug, p.name);
    for (const pm of await em.find(ProjectMembership, { tenant: tenant.id })) add('ProjectMember', pm.id);
    for (const g of await em.find(BreakGlassGrant, { tenant: tenant.id }))
      add('BreakGlassGrant', g.id, g.reason);
    for (const k of await em.find(ApiToken, { tenant: tenant.id })) add('ApiToken', k.id, k.prefix);
    for (const r of await em.find(QuotaRequest, { tenant: tenant.id }))
      add('QuotaRequest', r.id, r.justification);
    for (const a of await em.find(AuditEvent, { tenant: tenant.id })) add('AuditEvent', a.id);
    for (const q of await em.find(Queue, { tenant: tenant.id })) add('Queue', q.id, q.name);
    for (const j of await em.find(Job, { tenant: tenant.id })) add('Job', j.id, j.name);
    return [...out];
  }
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not reached in time');
}
