import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationCost } from '../../../plugins/useRateLimits.js';
import { describeEachDialect } from '../../helpers/database.js';
import {
  codesOf,
  expectOk,
  expectRefusedUnchanged,
  startTestApp,
  type TestApp,
} from '../../helpers/harness.js';

const SUBMIT_JOBS = `mutation($jobs: [SubmitJobInput!]!) { submitJobs(jobs: $jobs) { id name state queue { name } submittedAt expectedDurationSeconds gpus podSets { name count gpusPerPod } } }`;
/** Each job's state, by id (aliases: one request). */
const STATES = (ids: string[]) =>
  `query { ${ids.map((id, i) => `j${i}: node(id: "${id}") { ... on Job { state pendingReason { code } } }`).join(' ')} }`;
const AUDIT = `query($id: ID!) { auditEvents(tenantId: $id, first: 50) { edges { node { action outcome targetId input } } } }`;

let t: TestApp;
let aurora: Record<string, string>;
let borealis: Record<string, string>;
let max: string;
let ada: string;

const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1];
/** A sweep: one shape, one argument changing, as a user's script would send it. */
const sweep = (n: number, prefix: string, extra: (i: number) => Record<string, unknown> = () => ({})) =>
  Array.from({ length: n }, (_, i) => ({
    queueId: aurora.Queue,
    name: `${prefix}-${i}`,
    podSets: [{ gpusPerPod: 1 }],
    expectedDurationSeconds: 36_000,
    ...extra(i),
  }));

async function count(table: string, where = ''): Promise<number> {
  const [row] = await t.app.orm.em
    .getConnection()
    .execute<{ n: number | string }[]>(`select count(*) as n from ${table} ${where}`);
  return Number(row!.n);
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not reached in time');
}

describeEachDialect('submitJobs', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    borealis = await t.idsOf('borealis-inference');
    max = t.token('aurora-research', 'MEMBER');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('writes every job in input order, each admitted or pending as submitJob would, with one audit event listing them', async () => {
    const jobsBefore = await count('jobs');
    const eventsBefore = await count('job_events', "where type = 'SUBMITTED'");
    const data = await expectOk(t, max, SUBMIT_JOBS, { jobs: sweep(40, 'sweep') });
    const jobs = data.submitJobs as { id: string; name: string; state: string; queue: { name: string } }[];
    expect(jobs.map((j) => j.name)).toEqual(Array.from({ length: 40 }, (_, i) => `sweep-${i}`));
    expect(new Set(jobs.map((j) => j.id)).size).toBe(40);
    expect(jobs.every((j) => j.state === 'PENDING' && j.queue.name === 'aurora-training')).toBe(true);
    expect(await count('jobs')).toBe(jobsBefore + 40);
    expect(await count('job_events', "where type = 'SUBMITTED'")).toBe(eventsBefore + 40);

    // The scheduler got every one: each is admitted, or pending for a reason it evaluated.
    const ids = jobs.map((j) => j.id);
    let states: { state: string; pendingReason: { code: string } | null }[] = [];
    await waitFor(async () => {
      // At most 30 aliases per request (the query limits).
      const halves = await Promise.all(
        [ids.slice(0, 20), ids.slice(20)].map((part) => expectOk(t, max, STATES(part))),
      );
      states = halves.flatMap((data) => Object.values(data));
      return states.every(
        (s) => s.state !== 'PENDING' || (s.pendingReason && s.pendingReason.code !== 'NotYetEvaluated'),
      );
    });
    expect(states.some((s) => s.state !== 'PENDING')).toBe(true);

    const audit = (await expectOk(t, ada, AUDIT, { id: aurora.Tenant })).auditEvents.edges
      .map((e: any) => e.node)
      .filter((e: any) => e.action === 'job.submitBatch');
    expect(audit).toHaveLength(1);
    expect(audit[0].outcome).toBe('SUCCESS');
    expect(audit[0].input.count).toBe(40);
    expect(audit[0].input.jobs.map((j: { id: string }) => j.id)).toEqual(ids.map(rawId));
    expect(audit[0].input.jobs[7]).toMatchObject({ name: 'sweep-7', queue: 'aurora-training' });
  });

  it('a retried call with the same keys returns the same jobs and writes nothing; a key reused for another payload is a CONFLICT', async () => {
    const jobs = sweep(25, 'keyed', (i) => ({ idempotencyKey: `keyed-${i}` }));
    const written = (await expectOk(t, max, SUBMIT_JOBS, { jobs })).submitJobs;
    const first = written.map((j: { id: string }) => j.id);
    const before = await t.rowCounts();
    // The retry's answer is read back from the database: the bulk insert stored what the first answer said.
    const reread = (await expectOk(t, max, SUBMIT_JOBS, { jobs })).submitJobs;
    const again = reread.map((j: { id: string }) => j.id);
    expect(again).toEqual(first);
    const stable = (j: Record<string, unknown>) => ({ ...j, state: undefined });
    expect(reread.map(stable)).toEqual(written.map(stable));
    expect(await t.rowCounts()).toEqual(before);

    // Same keys, one payload changed (index 9): refused as a whole, naming the job.
    const changed = jobs.map((j, i) => (i === 9 ? { ...j, name: 'something else' } : j));
    const res = await expectRefusedUnchanged(t, max, SUBMIT_JOBS, { jobs: changed }, 'CONFLICT');
    expect(res.body.errors![0]!.message).toMatch(/^jobs\[9\]: /);

    // Part retry, part new: the known key answers with its job, the new one is made.
    const mixed = [jobs[3]!, { ...jobs[0]!, name: 'keyed-new', idempotencyKey: 'keyed-new' }];
    const answer = (await expectOk(t, max, SUBMIT_JOBS, { jobs: mixed })).submitJobs.map(
      (j: { id: string }) => j.id,
    );
    expect(answer[0]).toBe(first[3]);
    expect(first).not.toContain(answer[1]);
  });

  it("one call may go to several of the tenant's queues, and answers each job with its own", async () => {
    const platform = t.token(null, 'PLATFORM_ADMIN');
    const second = (
      await expectOk(t, platform, `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`, {
        in: { name: 'aurora-sweeps', tenantId: aurora.Tenant, quotas: [{ flavor: 'h100-80g', nominal: 4 }] },
      })
    ).createQueue.id;
    // The scheduler takes a new queue in with its next configuration rebuild (asynchronous).
    const preview = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible } }`;
    await waitFor(
      async () =>
        !(await t.gql(max, preview, { in: sweep(1, 'probe', () => ({ queueId: second }))[0] })).body.errors,
    );
    const jobs = sweep(6, 'two-queues', (i) => (i % 2 ? { queueId: second } : {}));
    const answer = (await expectOk(t, max, SUBMIT_JOBS, { jobs })).submitJobs;
    expect(answer.map((j: { queue: { name: string } }) => j.queue.name)).toEqual([
      'aurora-training',
      'aurora-sweeps',
      'aurora-training',
      'aurora-sweeps',
      'aurora-training',
      'aurora-sweeps',
    ]);
  });

  it('two copies of one call sent at once make each job once, and both answer the same jobs', async () => {
    const jobs = sweep(50, 'race', (i) => ({ idempotencyKey: `race-${i}` }));
    const jobsBefore = await count('jobs');
    const [a, b] = await Promise.all([t.gql(max, SUBMIT_JOBS, { jobs }), t.gql(max, SUBMIT_JOBS, { jobs })]);
    expect(a.body.errors, JSON.stringify(a.body)).toBeUndefined();
    expect(b.body.errors, JSON.stringify(b.body)).toBeUndefined();
    const ids = (res: typeof a) => (res.body.data as any).submitJobs.map((j: { id: string }) => j.id);
    expect(ids(a)).toEqual(ids(b));
    expect(await count('jobs')).toBe(jobsBefore + 50);
  });

  it('refuses a call that repeats a key, or has no jobs, or more than 1,000 (BAD_USER_INPUT), writing nothing', async () => {
    const repeated = sweep(5, 'dup', (i) => ({ idempotencyKey: i === 4 ? 'dup-1' : `dup-${i}` }));
    const res = await expectRefusedUnchanged(t, max, SUBMIT_JOBS, { jobs: repeated }, 'BAD_USER_INPUT');
    expect(res.body.errors![0]!.message).toMatch(/^jobs\[4\]: idempotencyKey is also that of jobs\[1\]/);

    await expectRefusedUnchanged(t, max, SUBMIT_JOBS, { jobs: [] }, 'BAD_USER_INPUT');
    const tooMany = await expectRefusedUnchanged(
      t,
      max,
      SUBMIT_JOBS,
      { jobs: sweep(1001, 'big') },
      'BAD_USER_INPUT',
    );
    expect(tooMany.body.errors![0]!.message).toMatch(/1 to 1000 jobs per call \(got 1001\)/);
  });

  it('a bad job at any index refuses the whole call, naming the index, and writes nothing', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      // The scheduler's validation (an unknown priority class).
      [{ priorityClass: 'no-such-class' }, 'BAD_USER_INPUT', /^jobs\[17\]: /],
      // Container security, refused while converting the input.
      [
        { container: { image: 'nvcr.io/nvidia/pytorch:24.01-py3', securityContext: { privileged: true } } },
        'BAD_USER_INPUT',
        /^jobs\[17\]: A privileged container/,
      ],
      // The tenant's data boundaries.
      [{ container: { image: 'docker.io/library/ubuntu:22.04' } }, 'BAD_USER_INPUT', /^jobs\[17\]: Image/],
      // A grant the project lacks (FORBIDDEN, as submitJob).
      [{ priorityClass: 'inference-critical' }, 'FORBIDDEN', /^jobs\[17\]: Priority class/],
      // The graph's own validation names the index too.
      [{ podSets: [{ gpusPerPod: -1 }] }, 'BAD_USER_INPUT', /jobs\.17\.podSets\.0\.gpusPerPod/],
    ];
    for (const [bad, code, message] of cases) {
      const jobs = sweep(30, 'bad', (i) => (i === 17 ? bad : {}));
      const eventsBefore = await count('job_events', "where type = 'SUBMITTED'");
      const res = await expectRefusedUnchanged(t, max, SUBMIT_JOBS, { jobs }, code);
      expect(res.body.errors![0]!.message).toMatch(message);
      expect(await count('job_events', "where type = 'SUBMITTED'")).toBe(eventsBefore);
    }
  });

  it("another tenant's queue at one index is NOT_FOUND for that index, as a queue that does not exist", async () => {
    const foreign = sweep(10, 'foreign', (i) => (i === 6 ? { queueId: borealis.Queue } : {}));
    const res = await expectRefusedUnchanged(t, max, SUBMIT_JOBS, { jobs: foreign }, 'NOT_FOUND');
    const missing = sweep(10, 'missing', (i) =>
      i === 6
        ? { queueId: Buffer.from('Queue:00000000-0000-7000-8000-000000000000').toString('base64') }
        : {},
    );
    const none = await expectRefusedUnchanged(t, max, SUBMIT_JOBS, { jobs: missing }, 'NOT_FOUND');
    expect(res.body.errors![0]!.message).toBe('jobs[6]: Queue not found');
    expect(none.body.errors![0]!.message).toBe(res.body.errors![0]!.message);
    // A viewer may not submit at all.
    const vera = t.token('aurora-research', 'VIEWER');
    expect(codesOf(await t.gql(vera, SUBMIT_JOBS, { jobs: sweep(2, 'viewer') }))).toEqual(['FORBIDDEN']);
  });
});

describe('the rate limiter charges submitJobs by its size', () => {
  const cost = (query: string, variables?: Record<string, unknown>) =>
    operationCost(parse(query), undefined, variables);
  it('3 points as any mutation, plus one per 10 jobs, from the variable or the literal list, aliases and fragments included', () => {
    expect(cost('mutation { submitJob(input: {name: "a", podSets: []}) { id } }')).toBe(3);
    expect(
      cost('mutation($j: [SubmitJobInput!]!) { submitJobs(jobs: $j) { id } }', {
        j: new Array(1000).fill({}),
      }),
    ).toBe(103);
    expect(
      cost('mutation($j: [SubmitJobInput!]!) { submitJobs(jobs: $j) { id } }', { j: new Array(5).fill({}) }),
    ).toBe(4);
    expect(
      cost(
        'mutation { a: submitJobs(jobs: [{name: "a"}, {name: "b"}]) { id } ...F } fragment F on Mutation { submitJobs(jobs: [{name: "c"}]) { id } }',
      ),
    ).toBe(4);
    expect(cost('query { __typename }')).toBe(1);
  });
});
