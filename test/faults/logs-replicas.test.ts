// Job logs across replicas: two server processes on one PostgreSQL database with Redis between
// them. A follower of a running job's logs on the leader loses its replica (SIGKILL); it resumes on
// the other replica with the last batch's cursor, which also takes over the scheduling, and reads
// to the job's end: every line once, none missing, in order.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Client, createClient } from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { DemoCredential } from '../../src/server/demo/seed.js';
import { createTestDatabase, describeNeeding, type TestDatabase } from '../helpers/database.js';
import { gql, killAllServers, type ServerProcess, startServer, tokenOf } from '../helpers/process.js';

const FOLLOW = `subscription($id: ID!, $after: String) { jobLogs(id: $id, after: $after) { run ended cursor lines { pod text cursor } } }`;

interface Batch {
  run: number;
  ended: boolean;
  cursor: string;
  lines: { pod: number; text: string; cursor: string }[];
}

/** Follows until the stream ends or fails; resolves with what came and how it stopped. */
function follow(server: ServerProcess, token: string, id: string, after: string | null) {
  const client: Client = createClient({
    url: server.url.replace('http', 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
  });
  const batches: Batch[] = [];
  const done = new Promise<'ended' | 'dropped'>((resolve) => {
    client.subscribe<{ jobLogs: Batch }>(
      { query: FOLLOW, variables: { id, after } },
      {
        next: (m) => {
          if (m.data) batches.push(m.data.jobLogs);
          if (m.data?.jobLogs.ended) resolve('ended');
        },
        error: () => resolve('dropped'),
        complete: () => resolve(batches.at(-1)?.ended ? 'ended' : 'dropped'),
      },
    );
  });
  return { batches, done, client };
}

describeNeeding(['postgresql', 'redis'], 'job logs across two replicas', () => {
  let db: TestDatabase;
  let a: ServerProcess;
  let b: ServerProcess;
  let creds: DemoCredential[];
  const dirs: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('postgresql');
    if (db.database.dialect !== 'postgresql') throw new Error('expected PostgreSQL');
    for (const _ of [0, 1]) dirs.push(fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-logs-replica-')));
    const env = { DATABASE_URL: db.database.url, REDIS_URL: process.env.TEST_REDIS_URL };
    a = await startServer({ dataDir: dirs[0]!, label: 'replica A', env });
    b = await startServer({ dataDir: dirs[1]!, label: 'replica B', env });
    creds = a.credentials();
  }, 60_000);

  afterAll(async () => {
    await killAllServers();
    await db?.dispose().catch(() => undefined);
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a follower whose replica dies resumes on the other with its cursor: every line once, to the end', async () => {
    const member = tokenOf(creds, 'aurora-research', 'MEMBER');
    // A declared 100 minutes at the servers' time scale of 1000: 6 s, a step every 60 ms.
    const res = await gql(a.url, member, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
      in: {
        name: 'replicated-logs',
        podSets: [{ name: 'main', gpusPerPod: 1, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 6000,
        container: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', command: ['python', 'train.py'] },
      },
    });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    const id = res.data.submitJob.id as string;

    const first = follow(a, member, id, null);
    const deadline = Date.now() + 20_000;
    while (first.batches.flatMap((b) => b.lines).filter((l) => /step \d+\/100/.test(l.text)).length < 10) {
      if (Date.now() > deadline) throw new Error(`no steps from A: ${JSON.stringify(first.batches)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await a.kill('SIGKILL');
    expect(await first.done).toBe('dropped');
    const cursor = first.batches.at(-1)!.cursor;

    const second = follow(b, member, id, cursor);
    expect(
      await Promise.race([second.done, new Promise((r) => setTimeout(() => r('timeout'), 45_000))]),
    ).toBe('ended');
    await first.client.dispose();
    await second.client.dispose();

    const lines = [...first.batches, ...second.batches].flatMap((b) => b.lines);
    expect(new Set(lines.map((l) => l.cursor)).size).toBe(lines.length);
    const steps = lines.flatMap((l) => /step (\d+)\/100/.exec(l.text)?.[1] ?? []).map(Number);
    expect(steps).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(lines.filter((l) => /starting replicated-logs/.test(l.text))).toHaveLength(1);
    expect(lines.at(-1)!.text).toMatch(/finished: 100 steps, exit code 0/);
    expect(second.batches.length).toBeGreaterThan(0);
  }, 90_000);
});
