// Setup against a running Fairway over its API: the aurora tenant's ids, submitting jobs, and
// waiting for the scheduler to settle.
import http from 'node:http';
import { gql, post, sleep } from './load-client.js';
import type { Started } from './servers.js';

export interface Ids {
  tenantId: string;
  queueId: string;
  queueName: string;
  projectId: string;
}

export async function auroraIds(server: Started): Promise<Ids> {
  const d = await gql(
    server,
    server.tokens['aurora-research/TENANT_ADMIN']!,
    `{ tenant(slug: "aurora-research") { id queues { id name } projects(first: 5) { edges { node { id } } } } }`,
  );
  return {
    tenantId: d.tenant.id,
    queueId: d.tenant.queues[0].id,
    queueName: d.tenant.queues[0].name,
    projectId: d.tenant.projects.edges[0].node.id,
  };
}

export const SUBMIT = `mutation Submit($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;

export const SUBMIT_JOBS = `mutation SubmitJobs($jobs: [SubmitJobInput!]!) { submitJobs(jobs: $jobs) { id } }`;

/** One submitJobs call (`body` built from SUBMIT_JOBS): null when all `size` jobs were accepted, else what went wrong. */
export async function postSubmitJobs(
  agent: http.Agent,
  url: URL,
  token: string,
  body: string,
  size: number,
): Promise<string | null> {
  try {
    const res = await post(agent, url, token, body);
    const got = (JSON.parse(res.text) as { data?: { submitJobs?: unknown[] } }).data?.submitJobs;
    return got?.length === size ? null : `${res.status} ${res.text.slice(0, 200)}`;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Submits `count` jobs with at most `parallel` in flight; returns their ids in submit order. */
export async function submitMany(
  server: Started,
  token: string,
  count: number,
  parallel: number,
  input: (i: number) => Record<string, unknown>,
): Promise<string[]> {
  const ids: string[] = new Array(count);
  let next = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: parallel });
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (;;) {
        const i = next++;
        if (i >= count) return;
        const d = await gql(server, token, SUBMIT, { in: input(i) }, agent);
        ids[i] = d.submitJob.id;
      }
    }),
  );
  agent.destroy();
  return ids;
}

/** Waits until the queue's pending/admitted counts stop changing (the scheduler settled). */
export async function settle(
  server: Started,
  ids: Ids,
  token: string,
  timeoutMs = 30_000,
): Promise<{ pending: number; admitted: number }> {
  let last = '';
  let stable = 0;
  const deadline = Date.now() + timeoutMs;
  let now = { pending: -1, admitted: -1 };
  while (Date.now() < deadline) {
    // A server still working through a backlog may answer late: give up at the deadline, not after the
    // answer.
    const d = await Promise.race([
      gql(
        server,
        token,
        `query($id: ID!) { node(id: $id) { ... on Queue { pendingCount admittedCount } } }`,
        { id: ids.queueId },
      ),
      sleep(Math.max(0, deadline - Date.now())).then(() => null),
    ]);
    if (!d) break;
    now = { pending: d.node.pendingCount, admitted: d.node.admittedCount };
    const key = JSON.stringify(now);
    stable = key === last ? stable + 1 : 0;
    last = key;
    if (stable >= 3) return now;
    await sleep(150);
  }
  return now;
}
