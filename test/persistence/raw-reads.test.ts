import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type MikroORM, wrap } from '@mikro-orm/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { uuidv7 } from '../../src/persistence/ids.js';
import { Job } from '../../src/persistence/jobs/entities.js';
import { JobRow, type JobRowPage, readJobRows } from '../../src/persistence/jobs/job-rows.js';
import { migrate, openDatabase } from '../../src/persistence/orm.js';
import { findMapped, findPlain } from '../../src/persistence/raw-reads.js';
import { Project, Tenant, User } from '../../src/persistence/tenancy/entities.js';
import { scopedEntityManager, type TenantFilterParams } from '../../src/persistence/tenant-filter.js';
import { seedDemo } from '../../src/server/demo/seed.js';
import { createTestDatabase, describeEachDialect, type TestDatabase } from '../helpers/database.js';

/**
 * The hand-written readers (job-rows.ts, raw-reads.ts) return what `em.find` returns, and
 * apply the tenant filter as the ORM does: another tenant's rows never come back.
 */
/** A plain row's own properties as plain data (relations by id, dates as ISO text). */
function rowData(row: object): unknown {
  const data: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(row)) data[key] = v && typeof v === 'object' && 'id' in v ? v.id : v;
  return JSON.parse(JSON.stringify(data));
}

describeEachDialect('raw reads match the ORM', (dialect) => {
  let db: TestDatabase;
  let orm: MikroORM;
  let aurora: Tenant;
  let borealis: Tenant;
  const scopes = (): [string, TenantFilterParams][] => [
    ['own tenant', { tenantIds: [aurora.id] }],
    ['other tenant', { tenantIds: [borealis.id] }],
    ['no tenant', { tenantIds: [] }],
    ['platform', { all: true }],
  ];

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    orm = await openDatabase({ database: db.database });
    await migrate(orm);
    await seedDemo(orm, fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-raw-reads-')));
    const em = scopedEntityManager(orm, { all: true });
    aurora = await em.findOneOrFail(Tenant, { slug: 'aurora-research' });
    borealis = await em.findOneOrFail(Tenant, { slug: 'borealis-inference' });
    for (const tenant of [aurora, borealis]) {
      const queue = await em.findOneOrFail(Queue, { tenant: tenant.id });
      const project = await em.findOneOrFail(Project, { tenant: tenant.id });
      const user = await em.findOneOrFail(User, { email: { $ne: '' } });
      for (let i = 0; i < 12; i++) {
        const id = uuidv7();
        const running = i % 3 === 0;
        em.create(Job, {
          id,
          tenant,
          project: i % 5 === 4 ? null : project,
          queue,
          submittedBy: i % 4 === 3 ? null : user,
          name: `${tenant.slug}-${i}`,
          priorityClass: 'training',
          podSets: [{ name: 'main', count: 1, perPod: { gpu: 1, cpu: 0, memory: 0 }, flavors: ['h100-80g'] }],
          expectedDurationMs: i % 2 ? 3_600_000 : null,
          maxRunMs: null,
          workload:
            i % 4 === 0
              ? {
                  container: {
                    image: 'registry.example.com/x:1',
                    command: [],
                    args: [],
                    env: [],
                    datasets: [],
                  },
                }
              : null,
          state: running ? 'RUNNING' : 'PENDING',
          admission: running
            ? ({
                jobId: id,
                queue: queue.name,
                at: 1_700_000_000_000 + i,
                podSets: [],
                borrowed: i % 2 === 0,
                mode: 'fit',
              } as never)
            : null,
          idempotencyKey: null,
          requestHash: 'h'.repeat(64),
          submitTime: 1_700_000_000_000 + i,
          gpusRequested: 1.5,
          preemptionCount: i % 2,
          meteredFrom: running ? 1_700_000_000_500 + i : null,
          exitReason: null,
          submittedAt: new Date(1_700_000_000_000 + i * 1000),
          admittedAt: running ? new Date(1_700_000_100_000 + i) : null,
          startedAt: null,
          finishedAt: null,
        });
      }
    }
    await em.flush();
  }, 60_000);

  afterAll(async () => {
    await orm?.close(true);
    await db?.dispose();
  });

  /** An entity or a row as plain data: relations by id, dates as ISO text. */
  const plainJob = (job: object) => {
    const data: Record<string, unknown> =
      job instanceof JobRow
        ? {
            ...job,
            podSets: job.podSets,
            workload: job.workload,
            admission: job.admission,
            probeSummary: job.probeSummary,
            governanceFlag: job.governanceFlag,
            stoppingAdmission: job.stoppingAdmission,
          }
        : { ...wrap(job as Job).toObject() };
    for (const key of ['tenant', 'project', 'queue', 'submittedBy'])
      data[key] = (job as Record<string, { id: string } | null | undefined>)[key]?.id ?? null;
    return JSON.parse(JSON.stringify(data));
  };

  it('reads the same job pages as em.find, under every tenant scope', async () => {
    const all = await scopedEntityManager(orm, { all: true }).find(
      Job,
      { tenant: aurora.id },
      { orderBy: { id: 'asc' } },
    );
    const pages: JobRowPage[] = [
      { limit: 5, inverted: true },
      { limit: 50, inverted: false },
      { after: all[3]!.id, limit: 4, inverted: false },
      { before: all[9]!.id, limit: 3, inverted: true },
    ];
    for (const [label, scope] of scopes()) {
      for (const page of pages) {
        const id: Record<string, string> = {};
        if (page.after) id.$gt = page.after;
        if (page.before) id.$lt = page.before;
        const expected = await scopedEntityManager(orm, scope).find(
          Job,
          { tenant: aurora.id, ...(page.after || page.before ? { id } : {}) },
          { orderBy: { id: page.inverted ? 'desc' : 'asc' }, limit: page.limit },
        );
        const rows = await readJobRows(scopedEntityManager(orm, scope), { tenantId: aurora.id }, page);
        expect(rows.map(plainJob), `${label} ${JSON.stringify(page)}`).toEqual(expected.map(plainJob));
        if (label === 'other tenant' || label === 'no tenant') expect(rows).toEqual([]);
      }
    }
    // Only some columns (JobRowPage.columns): those properties and the key ones as a full read has them, the
    // others unset; the same rows under every scope.
    for (const [label, scope] of scopes()) {
      const em = scopedEntityManager(orm, scope);
      const full = await readJobRows(em, { tenantId: aurora.id }, { limit: 50, inverted: true });
      const narrow = await readJobRows(
        em,
        { tenantId: aurora.id },
        { limit: 50, inverted: true, columns: ['gpus_requested', 'submitted_at'] },
      );
      expect(
        narrow.map((j) => j.id),
        label,
      ).toEqual(full.map((j) => j.id));
      for (const [i, row] of narrow.entries()) {
        const { id, tenant, project, queue, submittedBy, name, state, gpusRequested, submittedAt } = full[i]!;
        expect(row).toMatchObject({
          id,
          tenant,
          project,
          queue,
          submittedBy,
          name,
          state,
          gpusRequested,
          submittedAt,
        });
        expect(row.requestHash).toBeUndefined();
        expect(row.priorityClass).toBeUndefined();
      }
    }
    const filtered = await readJobRows(
      scopedEntityManager(orm, { tenantIds: [aurora.id] }),
      {
        tenantId: aurora.id,
        states: ['RUNNING'],
        submittedAfter: new Date(1_700_000_003_000),
        submittedBefore: new Date(1_700_000_010_000),
      },
      { limit: 50, inverted: false },
    );
    expect(filtered.map((j) => j.name)).toEqual([
      'aurora-research-3',
      'aurora-research-6',
      'aurora-research-9',
    ]);
    expect(filtered[0]!.submittedAt).toBeInstanceOf(Date);
    expect(filtered[0]!.admission).toMatchObject({ borrowed: false, mode: 'fit' });
    expect(typeof filtered[0]!.meteredFrom).toBe('number');
  });

  it('maps config rows to managed entities equal to em.find, under every tenant scope', async () => {
    for (const [label, scope] of scopes()) {
      for (const tenant of [aurora, borealis]) {
        const em = scopedEntityManager(orm, scope);
        const queues = await findMapped(em, Queue, { tenant_id: tenant.id }, { orderBy: 'name' });
        const expected = await scopedEntityManager(orm, scope).find(
          Queue,
          { tenant: tenant.id },
          { orderBy: { name: 'asc' } },
        );
        expect(
          queues.map((q) => wrap(q).toObject()),
          label,
        ).toEqual(expected.map((q) => wrap(q).toObject()));
        for (const queue of queues) expect(em.getUnitOfWork().getById('Queue', queue.id)).toBe(queue);
        const projects = await findMapped(scopedEntityManager(orm, scope), Project, {
          id: [tenant.defaultProjectId!],
        });
        const expectedProjects = await scopedEntityManager(orm, scope).find(Project, {
          id: { $in: [tenant.defaultProjectId!] },
        });
        expect(
          projects.map((p) => wrap(p).toObject()),
          label,
        ).toEqual(expectedProjects.map((p) => wrap(p).toObject()));
      }
      // Tenants carry no tenant filter: every caller resolves a slug (the service checks the right after).
      const [bySlug] = await findMapped(
        scopedEntityManager(orm, scope),
        Tenant,
        { slug: 'borealis-inference' },
        { limit: 1 },
      );
      expect(bySlug?.id).toBe(borealis.id);
      expect(bySlug?.createdAt).toBeInstanceOf(Date);
    }
    expect(await findMapped(scopedEntityManager(orm, { tenantIds: [aurora.id] }), Queue, { id: [] })).toEqual(
      [],
    );
  });

  /** An entity or a plain row as plain data: relations by id, dates as ISO text, only what a row carries. */
  const plainOf = (value: object) => {
    const data: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(wrap(value as never).toObject?.() ?? value))
      data[key] = v && typeof v === 'object' && 'id' in v ? (v as { id: string }).id : v;
    return JSON.parse(JSON.stringify(data));
  };

  it('reads tenants, queues and projects as plain rows equal to em.find, under every tenant scope', async () => {
    for (const [label, scope] of scopes()) {
      for (const tenant of [aurora, borealis]) {
        const em = scopedEntityManager(orm, scope);
        const queues = await findPlain(em, Queue, { tenant_id: tenant.id }, { orderBy: 'name' });
        const expected = await scopedEntityManager(orm, scope).find(
          Queue,
          { tenant: tenant.id },
          { orderBy: { name: 'asc' } },
        );
        expect(
          queues.map((q) => rowData(q)),
          label,
        ).toEqual(expected.map(plainOf));
        // Not managed: nothing of them entered the EntityManager.
        expect(em.getUnitOfWork().getIdentityMap().values()).toEqual([]);
        for (const queue of queues) {
          expect(queue.constructor.name).toBe('QueueRow');
          expect(queue.tenant).toEqual({ id: tenant.id });
        }
        const ids = [
          tenant.defaultProjectId!,
          ...(await orm.em.fork().find(Project, {}, { filters: false })).map((p) => p.id),
        ];
        const projects = await findPlain(em, Project, { id: ids }, { orderBy: 'id' });
        const expectedProjects = await scopedEntityManager(orm, scope).find(
          Project,
          { id: { $in: ids } },
          { orderBy: { id: 'asc' } },
        );
        expect(
          projects.map((p) => rowData(p)),
          label,
        ).toEqual(expectedProjects.map(plainOf));
        if (label === 'no tenant') expect(projects).toEqual([]);
      }
      const [bySlug] = await findPlain(
        scopedEntityManager(orm, scope),
        Tenant,
        { slug: 'borealis-inference' },
        { limit: 1 },
      );
      const expectedTenant = await scopedEntityManager(orm, scope).findOneOrFail(Tenant, {
        slug: 'borealis-inference',
      });
      expect(rowData(bySlug!), label).toEqual(plainOf(expectedTenant));
      expect(bySlug!.createdAt).toBeInstanceOf(Date);
      expect(typeof bySlug!.projectsOpen).toBe('boolean');
    }
    expect(await findPlain(scopedEntityManager(orm, { tenantIds: [aurora.id] }), Queue, { id: [] })).toEqual(
      [],
    );
  });

  it('refuses an EntityManager without tenant filter parameters, as the ORM does', async () => {
    const bare = orm.em.fork({ clear: true });
    await expect(bare.find(Queue, {})).rejects.toThrow(/No arguments provided for filter/);
    await expect(findMapped(bare, Queue, {})).rejects.toThrow(/No arguments provided for filter/);
    await expect(findPlain(bare, Project, {})).rejects.toThrow(/No arguments provided for filter/);
    await expect(readJobRows(bare, { tenantId: aurora.id }, { limit: 1, inverted: false })).rejects.toThrow(
      /No arguments provided for filter/,
    );
  });
});
