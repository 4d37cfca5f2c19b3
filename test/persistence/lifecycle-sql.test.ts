import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { Job } from '../../src/persistence/jobs/entities.js';
import { TENANT_FILTER } from '../../src/persistence/tenant-filter.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

/**
 * The SQL a job costs from submit to its end (submit request, admission cycle,
 * outbox, backend start and finish, charging), one job alone and a burst of concurrent
 * submits. The counts are the throughput budget: each statement is ORM and driver work on the
 * one event loop. The bounds below fail a change that adds statements per job.
 */
let t: TestApp;
const statements: string[] = [];

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;

function kinds(list: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const raw of list) {
    const s = raw
      .replace(/\x1b\[[0-9;]*m/g, '')
      .replace(/^\[query\]\s*/, '')
      .trim()
      .toLowerCase();
    const kind = /^(begin|commit|rollback|savepoint|release)/.test(s)
      ? 'tx'
      : (s.match(/^(select|insert|update|delete|with)/)?.[1] ?? 'other');
    out[kind] = (out[kind] ?? 0) + 1;
  }
  return out;
}

async function finished(ids: string[], timeoutMs = 8000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const em = t.app.orm.em.fork({ clear: true });
    em.setFilterParams(TENANT_FILTER, { all: true });
    const done = await em.count(Job, { id: { $in: ids }, state: 'SUCCEEDED' });
    if (done === ids.length) return;
    if (Date.now() > deadline)
      throw new Error(
        `${done}/${ids.length} finished: ${JSON.stringify((await em.find(Job, { id: { $in: ids } })).map((j) => j.state))}`,
      );
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until nothing has been written for a while (the scheduler's follow-up work). */
async function quiesce(quietMs = 200) {
  let seen = statements.length;
  let quietSince = Date.now();
  for (;;) {
    await new Promise((r) => setTimeout(r, 20));
    if (statements.length !== seen) (seen = statements.length), (quietSince = Date.now());
    else if (Date.now() - quietSince >= quietMs) return;
  }
}

let queueId: string;
let member: string;

beforeAll(async () => {
  t = await startTestApp({ onQuery: (sql) => statements.push(sql) });
  const em = t.app.orm.em.fork({ clear: true });
  em.setFilterParams(TENANT_FILTER, { all: true });
  const queue = await em.findOneOrFail(Queue, { name: 'aurora-training' });
  queueId = Buffer.from(`Queue:${queue.id}`).toString('base64');
  member = t.token('aurora-research', 'MEMBER');
  await quiesce();
});
afterAll(async () => {
  await t?.close();
});

async function lifecycle(n: number, concurrency = n) {
  const before = statements.length;
  const cpu = process.cpuUsage();
  const started = performance.now();
  let next = 0;
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) {
        const i = next++;
        const res = await t.gql(member, SUBMIT, {
          in: {
            queueId,
            name: `sql-${n}-${i}`,
            podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }],
            expectedDurationSeconds: 1,
          },
        });
        expect(res.body.errors).toBeUndefined();
        const globalId = (res.body.data as { submitJob: { id: string } }).submitJob.id;
        ids.push(Buffer.from(globalId, 'base64').toString().split(':')[1]!);
      }
    }),
  );
  const submitted = statements.length - before;
  await finished(ids);
  const seen = statements.slice(before);
  await quiesce();
  const used = process.cpuUsage(cpu);
  // Without this test's own polling (finished()).
  const all = statements
    .slice(before)
    .filter((sql) => !/select count\(\*\) as `count` from `jobs`/.test(sql));
  const cpuMsPerJob = (used.user + used.system) / 1000 / n;
  const wallMs = performance.now() - started;
  return { cpuMsPerJob, wallMs, submitted, total: seen.length, kinds: kinds(all), all };
}

describe('SQL per job lifecycle', () => {
  it('one job: submit, admit, start, finish', async () => {
    const one = await lifecycle(1);
    console.log(
      `one job: ${one.submitted} statements in the submit request, ${one.all.length} in all ${JSON.stringify(one.kinds)}`,
    );
    if (process.env.LIFECYCLE_SQL_PRINT)
      console.log(one.all.map((s) => `  ${s.replace(/\x1b\[[0-9;]*m/g, '').slice(0, 200)}`).join('\n'));
    // 35 with the submit read in one statement, the leader's reads as plain rows and the price book in one
    // statement; 41 before them with the group-commit window (FAIRWAY_GROUP_COMMIT_MS: the leader's start and
    // finish reports of a short job share a transaction), 47 without it, 51 before the batched writes.
    expect(one.all.length).toBeLessThanOrEqual(36);
  });

  it('a burst of 50 concurrent submits', async () => {
    const burst = await lifecycle(50);
    console.log(
      `50 jobs: ${(burst.submitted / 50).toFixed(1)} statements per job in the submit requests, ${(burst.all.length / 50).toFixed(1)} per job in all ${JSON.stringify(burst.kinds)}`,
    );
    if (process.env.LIFECYCLE_SQL_PRINT)
      console.log(
        burst.all
          .slice(-Number(process.env.LIFECYCLE_SQL_PRINT) || -400)
          .map((s) => `  ${s.replace(/\x1b\[[0-9;]*m/g, '').slice(0, 200)}`)
          .join('\n'),
      );
    // 22.0-22.2 per job with multi-row UPDATEs, the submit read in one statement and the pods' logs archived
    // together (most transactions here still hold one or two jobs, so each one's reads of the policy library,
    // tiers and prices count per job); 30.2 before them with the group-commit window (2 ms: submits share
    // their transaction on SQLite too, and so do the leader's reports); 42.9 without it. The write path aims at 8.
    expect(burst.all.length / 50).toBeLessThanOrEqual(26);
  });
});
