// Part 1: a tenant dashboard query at concurrency 1, 8, 32, 128 (closed loop), Fairway vs a bare
// graphql-yoga server answering the same query text from in-memory data of the same size.
import type { BaselineSpec } from './baseline-server.js';
import { closedLoop, gql, post, sharedAgent } from './load-client.js';
import { rssKiB } from './process-stats.js';
import { f0, f1, ms, out, reportServerErrors, table, verdict } from './report.js';
import { type SeedJob, startBaseline, startFairway } from './servers.js';
import { auroraIds, settle } from './tenant-setup.js';

// The dashboard query (both servers; bench/flood.ts asks it too).
export const DASHBOARD = `query Dashboard($slug: String!) {
  tenant(slug: $slug) {
    queues {
      name
      usage { flavor used borrowed }
      pendingCount
      jobs(last: 50) { edges { node { name state project { name } position { inQueue } } } }
    }
  }
}`;

export async function dashboardThroughput(seconds: number): Promise<void> {
  out('## 1. Tenant dashboard query — Fairway vs bare graphql-yoga');
  out();
  out(
    "Target: at concurrency 32, Fairway req/s ≥ 0.5× bare yoga's (measured in the same run), and server CPU ≤ 1 ms per request.",
  );
  out();
  // ~200 jobs in aurora's queue: 150 one-GPU H100 jobs (32 H100s in the cohort: the rest pend)
  // and 50 one-slice MIG jobs (all admitted), running for a declared 11 days at time scale 60.
  const seed: SeedJob[] = Array.from({ length: 200 }, (_, i) => ({
    name: `dash-${i}`,
    flavor: i % 4 === 3 ? 'a100-1g.10gb' : 'h100-80g',
    gpus: 1,
    seconds: 1e6,
  }));
  const server = await startFairway(60, seed);
  try {
    const ids = await auroraIds(server);
    const admin = server.tokens['aurora-research/TENANT_ADMIN']!;
    const counts = await settle(server, ids, admin);
    // The same jobs (names, states, projects) for the bare server, oldest first.
    type Row = { name: string; state: string; project: { name: string } | null };
    const rowsSeen: Row[] = [];
    let q: { name: string; usage: BaselineSpec['usage'] } | null = null;
    for (let after: string | null = null; ; ) {
      const page: {
        node: {
          name: string;
          usage: BaselineSpec['usage'];
          jobs: { edges: { node: Row }[]; pageInfo: { endCursor: string | null; hasNextPage: boolean } };
        };
      } = await gql(
        server,
        admin,
        `query($id: ID!, $after: String) { node(id: $id) { ... on Queue { name usage { flavor used borrowed } jobs(first: 100, after: $after) { edges { node { name state project { name } } } pageInfo { endCursor hasNextPage } } } } }`,
        { id: ids.queueId, after },
      );
      q = { name: page.node.name, usage: page.node.usage };
      rowsSeen.push(...page.node.jobs.edges.map((e) => e.node));
      if (!page.node.jobs.pageInfo.hasNextPage) break;
      after = page.node.jobs.pageInfo.endCursor;
    }
    const spec: BaselineSpec = {
      slug: 'aurora-research',
      queueName: q!.name,
      usage: q!.usage,
      jobs: rowsSeen.map((r) => ({ name: r.name, state: r.state, project: r.project?.name ?? null })),
    };
    const bare = await startBaseline(spec);
    try {
      const body = JSON.stringify({ query: DASHBOARD, variables: { slug: 'aurora-research' } });
      // Same query text, same answer shape and size on both.
      const fw = await post(sharedAgent, new URL(server.url), admin, body);
      const bw = await post(sharedAgent, new URL(bare.url), null, body);
      const fwJson = JSON.parse(fw.text);
      const bwJson = JSON.parse(bw.text);
      if (fwJson.errors || bwJson.errors)
        throw new Error(`dashboard query failed: ${fw.text.slice(0, 300)} / ${bw.text.slice(0, 300)}`);
      const fwEdges = fwJson.data.tenant.queues[0].jobs.edges.length;
      const pendingShown = fwJson.data.tenant.queues[0].jobs.edges.filter(
        (e: { node: { position: unknown } }) => e.node.position,
      ).length;
      out(
        `Setup: ${spec.jobs.length} jobs in ${q.name} (seeded in the database before start; the server admitted ${counts.admitted}, ${counts.pending} pending). ` +
          `The query returns ${fwEdges} jobs (${pendingShown} pending, each with its position). Response: Fairway ${fw.text.length} B, bare ${bw.text.length} B. ` +
          `Closed loop, keep-alive HTTP/1.1, 1 s warm-up + ${seconds} s per level; load generator in the parent process on the same 2 cores. ` +
          'CPU ms/req = server process CPU time (all threads, /proc/<pid>/stat) between the two ends of the measured window / requests answered in it.',
      );
      out();
      const rows: string[][] = [];
      let at32: { ratio: number; cpu: number } | null = null;
      for (const c of [1, 8, 32, 128]) {
        // Server CPU time per answered request too (measured window only): less sensitive than
        // req/s to other load on the machine.
        const a = await closedLoop(server.url, admin, body, c, 1000, seconds * 1000, server.pid);
        const b = await closedLoop(bare.url, null, body, c, 1000, seconds * 1000, bare.pid);
        const ra = a.ok / a.seconds;
        const rb = b.ok / b.seconds;
        const [cpuPerA, cpuPerB, shareA] = [a.cpuMsPerRequest, b.cpuMsPerRequest, a.share];
        if (c === 32) at32 = { ratio: ra / rb, cpu: cpuPerA };
        rows.push([
          String(c),
          f1(ra),
          ms(a.p50),
          ms(a.p99),
          ms(cpuPerA),
          shareA,
          f1(rb),
          ms(b.p50),
          ms(b.p99),
          ms(cpuPerB),
          `${(ra / rb).toFixed(3)} (1:${(rb / ra).toFixed(0)})`,
          String(a.errors + b.errors),
        ]);
        console.log(`  c=${c}: fairway ${f1(ra)} req/s, bare ${f1(rb)} req/s`);
      }
      out(
        table(
          [
            'concurrency',
            'fairway req/s',
            'p50 ms',
            'p99 ms',
            'CPU ms/req',
            'on-CPU / waiting',
            'bare req/s',
            'p50 ms',
            'p99 ms',
            'CPU ms/req',
            'ratio fw/bare (req/s)',
            'errors',
          ],
          rows,
        ),
      );
      out();
      const r32 = at32 as { ratio: number; cpu: number } | null;
      if (r32)
        out(
          `At concurrency 32: ratio ${r32.ratio.toFixed(3)} of bare yoga (target ≥ 0.5: ${verdict(r32.ratio, '>=', 0.5)}); server CPU ${ms(r32.cpu)} ms per request (target ≤ 1: ${verdict(r32.cpu, '<=', 1)}).`,
        );
      out();
      out(
        `Server RSS after the load: Fairway ${f0(rssKiB(server.pid) / 1024)} MiB, bare yoga ${f0(rssKiB(bare.pid) / 1024)} MiB.`,
      );
      out();
    } finally {
      await bare.stop();
    }
  } finally {
    reportServerErrors(server);
    await server.stop();
  }
}
