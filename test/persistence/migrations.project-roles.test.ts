import type { MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { postgresqlMigrations } from '../../migrations/postgresql/index.js';
import { sqliteMigrations } from '../../migrations/sqlite/index.js';
import { migrate, openDatabase } from '../../src/persistence/orm.js';
import { createTestDatabase, type Dialect, describeEachDialect } from '../helpers/database.js';
import { codesOf, startTestApp, type TestApp } from '../helpers/harness.js';

/**
 * Migration on a database filled the way the previous schema did it: raw SQL,
 * no entities (the entities already describe the new schema). Then migrated up, and used
 * through the running app: members keep submitting and reading jobs as before.
 */
const PROJECT_ROLES_MIGRATION = {
  sqlite: 'Migration20261201020820',
  postgresql: 'Migration20261201020823',
} as const;
const listed = { sqlite: sqliteMigrations, postgresql: postgresqlMigrations };

function migrationBefore(dialect: Dialect): string {
  const names = listed[dialect].map((m) => m.name);
  const at = names.indexOf(PROJECT_ROLES_MIGRATION[dialect]);
  if (at < 1) throw new Error(`${PROJECT_ROLES_MIGRATION[dialect]} is not listed after another migration`);
  return names[at - 1]!;
}

/** Fixed ids (valid UUIDs for PostgreSQL), so the assertions can name every row. */
const ID = {
  root: '00000000-0000-4000-8000-000000000001',
  alice: '00000000-0000-4000-8000-000000000002', // TENANT_ADMIN of alpha
  mia: '00000000-0000-4000-8000-000000000003', // MEMBER of alpha
  vic: '00000000-0000-4000-8000-000000000004', // VIEWER of alpha
  nora: '00000000-0000-4000-8000-000000000005', // MEMBER of beta
  gil: '00000000-0000-4000-8000-000000000006', // MEMBER of gamma
  alpha: '00000000-0000-4000-8000-0000000000a1',
  beta: '00000000-0000-4000-8000-0000000000b1',
  gamma: '00000000-0000-4000-8000-0000000000e1', // only an archived project, slugged "default"
  gammaArchived: '00000000-0000-4000-8000-0000000000e2',
  alphaOld: '00000000-0000-4000-8000-0000000000a2', // archived, older
  alphaMain: '00000000-0000-4000-8000-0000000000a3',
  flavor: '00000000-0000-4000-8000-0000000000f1',
  pool: '00000000-0000-4000-8000-0000000000f2',
  alphaQueue: '00000000-0000-4000-8000-0000000000c1',
  betaQueue: '00000000-0000-4000-8000-0000000000c2',
  gammaQueue: '00000000-0000-4000-8000-0000000000c3',
  jobPending: '00000000-0000-4000-8000-0000000000d1', // alpha, no project
  jobWithProject: '00000000-0000-4000-8000-0000000000d2', // alpha, in alpha-main already
  jobBeta: '00000000-0000-4000-8000-0000000000d3', // beta, no project
  jobGamma: '00000000-0000-4000-8000-0000000000d4', // gamma, no project
};
const EMAIL: Record<'root' | 'alice' | 'mia' | 'vic' | 'nora' | 'gil', string> = {
  root: 'root@ops.example',
  alice: 'alice@alpha.example',
  mia: 'mia@alpha.example',
  vic: 'vic@alpha.example',
  nora: 'nora@beta.example',
  gil: 'gil@gamma.example',
};

async function fillTheOldWay(orm: MikroORM, dialect: Dialect): Promise<void> {
  const connection = orm.em.getConnection();
  const run = (sql: string, params: unknown[]) => connection.execute(sql, params);
  // How each dialect stores a datetime and a boolean (SQLite: epoch ms and 0/1).
  const at = (iso: string) => (dialect === 'sqlite' ? Date.parse(iso) : iso);
  const bool = (b: boolean) => (dialect === 'sqlite' ? Number(b) : b);
  const t0 = at('2026-06-01T00:00:00Z');
  const t1 = at('2026-07-01T00:00:00Z');
  for (const [key, email] of Object.entries(EMAIL)) {
    await run(
      'insert into users (id, email, name, external_id, is_platform_admin, created_at, updated_at) values (?, ?, ?, null, ?, ?, ?)',
      [ID[key as keyof typeof EMAIL], email, key, bool(key === 'root'), t0, t0],
    );
  }
  for (const [id, slug] of [
    [ID.alpha, 'alpha'],
    [ID.beta, 'beta'],
    [ID.gamma, 'gamma'],
  ]) {
    await run(
      `insert into tenants (id, slug, name, tier, isolation_level, status, created_at, updated_at) values (?, ?, ?, 'STANDARD', 'ELASTIC', 'ACTIVE', ?, ?)`,
      [id, slug, slug, t0, t0],
    );
  }
  const memberships: [string, string, string][] = [
    [ID.alpha, ID.alice, 'TENANT_ADMIN'],
    [ID.alpha, ID.mia, 'MEMBER'],
    [ID.alpha, ID.vic, 'VIEWER'],
    [ID.beta, ID.nora, 'MEMBER'],
    [ID.gamma, ID.gil, 'MEMBER'],
  ];
  for (const [i, [tenant, user, role]] of memberships.entries()) {
    await run(
      'insert into memberships (id, tenant_id, user_id, role, created_at, updated_at) values (?, ?, ?, ?, ?, ?)',
      [`00000000-0000-4000-8000-0000000001${String(i).padStart(2, '0')}`, tenant, user, role, t0, t0],
    );
  }
  await run(
    `insert into flavors (id, name, kind, price_per_unit_hour, created_at) values (?, 'h100-80g', 'gpu', 2.5, ?)`,
    [ID.flavor, t0],
  );
  await run('insert into node_pools (id, name, dedicated_tenant_id, created_at) values (?, ?, ?, ?)', [
    ID.pool,
    'alpha-dedicated',
    ID.alpha,
    t0,
  ]);
  const queue = (id: string, name: string, tenant: string, dedicatedPool: string | null) =>
    run(
      `insert into queues (id, name, tenant_id, quotas, weight, queueing_strategy, preemption, time_windows, dedicated_pool, created_at, updated_at) values (?, ?, ?, ?, 1, 'BestEffortFIFO', ?, '[]', ?, ?, ?)`,
      [
        id,
        name,
        tenant,
        JSON.stringify({ 'h100-80g': { gpu: { nominal: 8 } } }),
        JSON.stringify({ withinQueue: 'Never' }),
        dedicatedPool,
        t0,
        t0,
      ],
    );
  await queue(ID.alphaQueue, 'alpha-q', ID.alpha, 'alpha-dedicated');
  await queue(ID.betaQueue, 'beta-q', ID.beta, null);
  await queue(ID.gammaQueue, 'gamma-q', ID.gamma, null);
  // Alpha: an archived older project and the active one; beta has none; gamma only an archived one.
  await run(
    `insert into projects (id, tenant_id, slug, name, description, status, archived_at, created_at, updated_at, default_queue_id) values (?, ?, 'default', 'Archived', null, 'ARCHIVED', ?, ?, ?, null)`,
    [ID.gammaArchived, ID.gamma, t1, t0, t1],
  );
  await run(
    `insert into projects (id, tenant_id, slug, name, description, status, archived_at, created_at, updated_at, default_queue_id) values (?, ?, 'old-experiments', 'Old', null, 'ARCHIVED', ?, ?, ?, null)`,
    [ID.alphaOld, ID.alpha, t1, t0, t1],
  );
  await run(
    `insert into projects (id, tenant_id, slug, name, description, status, archived_at, created_at, updated_at, default_queue_id) values (?, ?, 'alpha-main', 'Main', null, 'ACTIVE', null, ?, ?, ?)`,
    [ID.alphaMain, ID.alpha, t1, t1, ID.alphaQueue],
  );
  const job = (
    id: string,
    tenant: string,
    project: string | null,
    queueId: string,
    by: string,
    state: string,
    submitMs: number,
  ) =>
    run(
      `insert into jobs (id, tenant_id, project_id, queue_id, submitted_by_id, name, priority_class, pod_sets, expected_duration_ms, state, request_hash, submit_time, gpus_requested, submitted_at, updated_at, finished_at) values (?, ?, ?, ?, ?, ?, 'training', ?, 3600000, ?, 'old-hash', ?, 1, ?, ?, ?)`,
      [
        id,
        tenant,
        project,
        queueId,
        by,
        `old ${state.toLowerCase()} job`,
        JSON.stringify([{ name: 'main', count: 1, perPod: { gpu: 1 } }]),
        state,
        submitMs,
        t1,
        t1,
        state === 'PENDING' ? null : t1,
      ],
    );
  await job(
    ID.jobPending,
    ID.alpha,
    null,
    ID.alphaQueue,
    ID.mia,
    'PENDING',
    Date.parse('2026-07-02T00:00:00Z'),
  );
  await job(
    ID.jobWithProject,
    ID.alpha,
    ID.alphaMain,
    ID.alphaQueue,
    ID.alice,
    'SUCCEEDED',
    Date.parse('2026-07-01T00:00:00Z'),
  );
  await job(
    ID.jobBeta,
    ID.beta,
    null,
    ID.betaQueue,
    ID.nora,
    'SUCCEEDED',
    Date.parse('2026-07-01T00:00:00Z'),
  );
  await job(
    ID.jobGamma,
    ID.gamma,
    null,
    ID.gammaQueue,
    ID.gil,
    'SUCCEEDED',
    Date.parse('2026-07-01T00:00:00Z'),
  );
}

const gid = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');

describeEachDialect('migration to project roles', (dialect) => {
  let t: TestApp;
  let applied: string[];
  let rows: (sql: string) => Promise<Record<string, any>[]>;

  beforeAll(async () => {
    const db = await createTestDatabase(dialect);
    const orm = await openDatabase({ database: db.database });
    try {
      await orm.getMigrator().up({ to: migrationBefore(dialect) });
      await fillTheOldWay(orm, dialect);
      applied = await migrate(orm);
    } finally {
      await orm.close(true);
    }
    t = await startTestApp({ database: db, seed: false });
    rows = (sql) => t.app.orm.em.getConnection().execute(sql);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('applies the project-roles migration on top of the old data', () => {
    // First the project-roles migration; the migrations written after it follow.
    expect(applied[0]).toBe(PROJECT_ROLES_MIGRATION[dialect]);
  });

  it('existing tenants keep open visibility and get a default project (a new "default" one where there was none)', async () => {
    const tenants = await rows('select id, projects_open, default_project_id from tenants order by slug');
    expect(tenants.map((r) => [r.id, Boolean(r.projects_open)])).toEqual([
      [ID.alpha, true],
      [ID.beta, true],
      [ID.gamma, true],
    ]);
    // Alpha's default is its active project, not the older archived one.
    expect(tenants[0]!.default_project_id).toBe(ID.alphaMain);
    const betaProjects = await rows(
      `select id, slug, status, job_visibility from projects where tenant_id = '${ID.beta}'`,
    );
    expect(betaProjects).toEqual([
      { id: tenants[1]!.default_project_id, slug: 'default', status: 'ACTIVE', job_visibility: 'PROJECT' },
    ]);
    expect(await rows(`select count(*) as n from projects where tenant_id = '${ID.alpha}'`)).toEqual([
      { n: dialect === 'sqlite' ? 2 : '2' },
    ]);
    // Gamma had only an archived project (slug "default" taken): it gets a new active one to default to.
    const gammaProjects = await rows(
      `select id, slug, status from projects where tenant_id = '${ID.gamma}' order by status`,
    );
    expect(gammaProjects.map((p) => p.status)).toEqual(['ACTIVE', 'ARCHIVED']);
    expect(gammaProjects[0]!.slug).toMatch(/^default-[0-9a-f]{6}$/);
    expect(tenants[2]!.default_project_id).toBe(gammaProjects[0]!.id);
  });

  it('every job has a project: project-less ones moved to their tenant default project, others untouched', async () => {
    const jobs = await rows(
      'select j.id, j.project_id, t.default_project_id from jobs j join tenants t on t.id = j.tenant_id order by j.id',
    );
    expect(jobs.map((j) => j.project_id === null)).toEqual([false, false, false, false]);
    const byId = Object.fromEntries(jobs.map((j) => [j.id, j]));
    expect(byId[ID.jobPending]!.project_id).toBe(ID.alphaMain);
    expect(byId[ID.jobWithProject]!.project_id).toBe(ID.alphaMain);
    expect(byId[ID.jobBeta]!.project_id).toBe(byId[ID.jobBeta]!.default_project_id);
    expect(byId[ID.jobGamma]!.project_id).toBe(byId[ID.jobGamma]!.default_project_id);
    expect(byId[ID.jobGamma]!.project_id).not.toBe(ID.gammaArchived);
  });

  it('members become contributors of every project of their tenant; admins and viewers get no project rows', async () => {
    const memberships = await rows(
      'select pm.tenant_id, pm.user_id, pm.role, p.status, p.slug from project_memberships pm join projects p on p.id = pm.project_id order by pm.tenant_id, p.status, p.slug',
    );
    expect(
      memberships.map(({ slug, ...rest }) => ({ ...rest, slug: slug.replace(/^default-.*/, 'default-*') })),
    ).toEqual([
      { tenant_id: ID.alpha, user_id: ID.mia, role: 'CONTRIBUTOR', status: 'ACTIVE', slug: 'alpha-main' },
      {
        tenant_id: ID.alpha,
        user_id: ID.mia,
        role: 'CONTRIBUTOR',
        status: 'ARCHIVED',
        slug: 'old-experiments',
      },
      { tenant_id: ID.beta, user_id: ID.nora, role: 'CONTRIBUTOR', status: 'ACTIVE', slug: 'default' },
      { tenant_id: ID.gamma, user_id: ID.gil, role: 'CONTRIBUTOR', status: 'ACTIVE', slug: 'default-*' },
      { tenant_id: ID.gamma, user_id: ID.gil, role: 'CONTRIBUTOR', status: 'ARCHIVED', slug: 'default' },
    ]);
  });

  it("projects are granted the pools their tenant's queues are dedicated to", async () => {
    const projects = await rows(
      `select slug, granted_pools from projects where tenant_id in ('${ID.alpha}', '${ID.beta}') order by slug`,
    );
    const pools = Object.fromEntries(
      projects.map((p) => [
        p.slug,
        typeof p.granted_pools === 'string' ? JSON.parse(p.granted_pools) : p.granted_pools,
      ]),
    );
    expect(pools).toEqual({
      'alpha-main': ['alpha-dedicated'],
      'old-experiments': ['alpha-dedicated'],
      default: null,
    });
  });

  it('a member still sees every job of the tenant and submits to the dedicated queue without naming a project', async () => {
    const mia = await t.jwt(EMAIL.mia);
    const listed = await t.gql(
      mia,
      `query($id: ID!) { jobs(tenantId: $id, first: 10) { edges { node { id name project { slug } } } } }`,
      { id: gid('Tenant', ID.alpha) },
    );
    expect(listed.body.errors, JSON.stringify(listed.body)).toBeUndefined();
    const nodes = listed.body.data!.jobs.edges.map((e: any) => e.node);
    expect(nodes.map((n: any) => n.id).sort()).toEqual(
      [gid('Job', ID.jobPending), gid('Job', ID.jobWithProject)].sort(),
    );
    expect(nodes.every((n: any) => n.project?.slug === 'alpha-main')).toBe(true);

    const submitted = await t.gql(
      mia,
      `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id project { slug } } }`,
      {
        in: {
          queueId: gid('Queue', ID.alphaQueue),
          name: 'after the migration',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 60,
        },
      },
    );
    expect(submitted.body.errors, JSON.stringify(submitted.body)).toBeUndefined();
    expect(submitted.body.data!.submitJob.project.slug).toBe('alpha-main');

    // Her own job from before the migration is still hers to cancel.
    const cancelled = await t.gql(mia, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, {
      id: gid('Job', ID.jobPending),
    });
    expect(cancelled.body.errors, JSON.stringify(cancelled.body)).toBeUndefined();
    expect(cancelled.body.data!.cancelJob.state).toBe('CANCELLED');
  });

  it('members of tenants that had no (active) project submit into their new default project; a viewer still may not', async () => {
    const nora = await t.jwt(EMAIL.nora);
    const submitted = await t.gql(
      nora,
      `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id project { slug } } }`,
      {
        in: {
          queueId: gid('Queue', ID.betaQueue),
          name: 'beta after the migration',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 60,
        },
      },
    );
    expect(submitted.body.errors, JSON.stringify(submitted.body)).toBeUndefined();
    expect(submitted.body.data!.submitJob.project.slug).toBe('default');
    // Gamma's only project was archived: without the new default every submit would be refused.
    const gil = await t.jwt(EMAIL.gil);
    const inGamma = await t.gql(
      gil,
      `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id project { slug status } } }`,
      {
        in: {
          queueId: gid('Queue', ID.gammaQueue),
          name: 'gamma after the migration',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 60,
        },
      },
    );
    expect(inGamma.body.errors, JSON.stringify(inGamma.body)).toBeUndefined();
    expect(inGamma.body.data!.submitJob.project).toMatchObject({
      status: 'ACTIVE',
      slug: expect.stringMatching(/^default-/),
    });

    const vic = await t.jwt(EMAIL.vic);
    const before = await rows('select count(*) as n from jobs');
    const refused = await t.gql(vic, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
      in: { queueId: gid('Queue', ID.alphaQueue), name: 'viewer try', podSets: [{ gpusPerPod: 1 }] },
    });
    expect(codesOf(refused)).toEqual(['FORBIDDEN']);
    expect(await rows('select count(*) as n from jobs')).toEqual(before);
    // The viewer still reads the tenant's jobs (projects_open keeps today's visibility).
    const listed = await t.gql(
      vic,
      `query($id: ID!) { jobs(tenantId: $id, first: 10) { edges { node { id } } } }`,
      { id: gid('Tenant', ID.alpha) },
    );
    expect(listed.body.errors, JSON.stringify(listed.body)).toBeUndefined();
    expect(listed.body.data!.jobs.edges.length).toBe(3);
  });
});
