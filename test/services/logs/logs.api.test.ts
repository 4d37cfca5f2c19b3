// Job logs through the graph on the simulated cluster, SQLite and PostgreSQL, through a real port
// and a real socket: a job followed to its end, read again from the archive once its pods are gone,
// a secret never shown, another tenant refused as for a job that does not exist, a platform admin
// only under break-glass (audited), and bad arguments refused with nothing changed.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SimulatedBackend } from '../../../src/backends/simulated/simulated.js';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, startTestApp, type TestApp } from '../../helpers/harness.js';
import { liveSubscription, wsClient } from '../../helpers/live-subscription.js';

const SECRET = 'hf_s3cr3t-Token-4242';
const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const LOGS = `query($id: ID!, $tail: Int, $contains: String, $before: String, $pod: Int, $podSet: String, $run: Int) {
  node(id: $id) { ... on Job { state logs(tail: $tail, contains: $contains, before: $before, pod: $pod, podSet: $podSet, run: $run) {
    run runs hasEarlier archived lines { at run podSet pod stream text cursor } } } } }`;
const FOLLOW = `subscription($id: ID!, $after: String) { jobLogs(id: $id, after: $after) { run ended cursor lines { pod podSet text cursor stream } } }`;

describeEachDialect('job logs through the graph', (dialect) => {
  let t: TestApp;
  let member: string;
  let jobId: string;
  beforeAll(async () => {
    // A declared 10 minutes in 1 s: a step every 6 declared seconds, 100 of them.
    t = await startTestApp({
      dialect,
      backend: () => new SimulatedBackend({ timeScale: 600, now: Date.now }),
    });
    member = t.token('aurora-research', 'MEMBER');
  });
  afterAll(() => t?.close());
  const gql = async (bearer: string, query: string, variables?: Record<string, unknown>) =>
    (await t.gql(bearer, query, variables)).body as { data?: Record<string, any>; errors?: unknown[] };

  it('follows a running job to its end, each line once and in order, the secret masked; then reads it from the archive', async () => {
    const res = await gql(member, SUBMIT, {
      in: {
        name: 'llm-finetune',
        podSets: [{ name: 'workers', count: 2, gpusPerPod: 1 }],
        expectedDurationSeconds: 600,
        checkpoint: { intervalSeconds: 120 },
        container: {
          image: 'nvcr.io/nvidia/pytorch:24.05-py3',
          command: ['torchrun', 'train.py'],
          args: ['--hub-token', SECRET],
          env: [{ name: 'HF_TOKEN', value: SECRET, secret: true }],
        },
      },
    });
    expect(res.errors, JSON.stringify(res)).toBeUndefined();
    jobId = res.data!.submitJob.id;
    const client = wsClient(t.url, member);
    try {
      const stream = liveSubscription(client, FOLLOW, { id: jobId }, (d) => d.jobLogs);
      const batches = await stream.until((bs) => bs.some((b) => b.ended), 30_000);
      const lines = batches.flatMap((b) => b.lines);
      expect(new Set(lines.map((l: { cursor: string }) => l.cursor)).size).toBe(lines.length);
      for (const pod of [0, 1]) {
        const own = lines.filter((l: { pod: number }) => l.pod === pod).map((l: { text: string }) => l.text);
        expect(own[0]).toMatch(new RegExp(`\\[workers-${pod}\\] starting llm-finetune`));
        expect(own.at(-1)).toMatch(/finished: 100 steps, exit code 0/);
      }
      expect(
        lines.some((l: { text: string }) => l.text.includes('exec: torchrun train.py --hub-token [secret]')),
      ).toBe(true);
      expect(JSON.stringify(batches)).not.toContain(SECRET);
      expect(stream.errors).toEqual([]);
      stream.dispose();

      // The pods are gone: the same lines from the archive, newest last.
      const read = await gql(member, LOGS, { id: jobId, tail: 10_000 });
      expect(read.errors, JSON.stringify(read.errors)).toBeUndefined();
      const page = read.data!.node.logs;
      expect(page).toMatchObject({ run: 1, runs: 1, archived: true, hasEarlier: false });
      expect(page.lines.map((l: { text: string }) => l.text).sort()).toEqual(
        lines.map((l: { text: string }) => l.text).sort(),
      );
      expect(JSON.stringify(page)).not.toContain(SECRET);
      const container = await gql(
        member,
        `query($id: ID!) { node(id: $id) { ... on Job { container { env { name value secret } } } } }`,
        { id: jobId },
      );
      expect(container.data!.node.container.env).toEqual([
        { name: 'HF_TOKEN', value: '[secret]', secret: true },
      ]);
    } finally {
      await client.dispose();
    }
  });

  it('pages back with before, filters by pod and contains; a secret cannot be searched for', async () => {
    const last = (await gql(member, LOGS, { id: jobId, tail: 5 })).data!.node.logs;
    expect(last.lines).toHaveLength(5);
    expect(last.hasEarlier).toBe(true);
    const earlier = (await gql(member, LOGS, { id: jobId, tail: 5, before: last.lines[0].cursor })).data!.node
      .logs;
    expect(earlier.lines).toHaveLength(5);
    expect(earlier.lines.at(-1).at <= last.lines[0].at).toBe(true);
    expect(earlier.lines.map((l: { cursor: string }) => l.cursor)).not.toContain(last.lines[0].cursor);
    const pod1 = (await gql(member, LOGS, { id: jobId, pod: 1, podSet: 'workers', tail: 1000 })).data!.node
      .logs;
    expect(pod1.lines.every((l: { pod: number }) => l.pod === 1)).toBe(true);
    const steps = (await gql(member, LOGS, { id: jobId, contains: 'loss=', tail: 1000 })).data!.node.logs;
    expect(steps.lines.length).toBe(100);
    const secret = (await gql(member, LOGS, { id: jobId, contains: SECRET })).data!.node.logs;
    expect(secret.lines).toEqual([]);
  });

  it('another tenant gets NOT_FOUND on the field and the stream; a platform admin FORBIDDEN without break-glass, audited with it', async () => {
    const roles = t.credentials.filter((c) => c.tenant === 'borealis-inference').map((c) => c.role);
    expect(roles.length).toBeGreaterThan(1);
    for (const role of roles) {
      const other = t.token('borealis-inference', role);
      expect(codesOf(await t.gql(other, LOGS, { id: jobId })), role).toEqual(['NOT_FOUND']);
      const client = wsClient(t.url, other);
      try {
        const stream = liveSubscription(client, FOLLOW, { id: jobId }, (d) => d.jobLogs);
        await expect(stream.until(() => false, 3000)).rejects.toThrow(/NOT_FOUND|not found/);
        expect(stream.values).toEqual([]);
        expect(JSON.stringify(stream.errors)).not.toContain('llm-finetune');
      } finally {
        await client.dispose();
      }
    }
    const platform = t.token(null, 'PLATFORM_ADMIN');
    expect(codesOf(await t.gql(platform, LOGS, { id: jobId }))).toEqual(['FORBIDDEN']);
    const tenantId = (await t.idsOf('aurora-research')).Tenant;
    const open = await gql(
      platform,
      `mutation($in: OpenBreakGlassInput!) { openBreakGlass(input: $in) { id } }`,
      { in: { tenantId, reason: 'logs test: incident 42', durationMinutes: 30 } },
    );
    expect(open.errors, JSON.stringify(open.errors)).toBeUndefined();
    const read = await gql(platform, LOGS, { id: jobId, tail: 3 });
    expect(read.errors, JSON.stringify(read.errors)).toBeUndefined();
    expect(read.data!.node.logs.lines).toHaveLength(3);
    const audit = await gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `query($id: ID!) { auditEvents(tenantId: $id, last: 5) { edges { node { action } } } }`,
      { id: tenantId },
    );
    expect(JSON.stringify(audit.data)).toMatch(/break_?glass|breakGlass/i);
  });

  it('bad arguments are refused with BAD_USER_INPUT and change nothing', async () => {
    const before = await t.rowCounts();
    for (const args of [
      { tail: 0 },
      { tail: 10_001 },
      { run: 2 },
      { podSet: 'nope' },
      { pod: 7 },
      { before: 'not-a-cursor' },
    ]) {
      expect(codesOf(await t.gql(member, LOGS, { id: jobId, ...args })), JSON.stringify(args)).toEqual([
        'BAD_USER_INPUT',
      ]);
    }
    expect(await t.rowCounts()).toEqual(before);
  });
});
