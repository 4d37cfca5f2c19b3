// The bare graphql-yoga baseline of part 1: createYoga + createServer, no auth, no database, no
// plugins, answering the dashboard query from in-memory data. Runs in its own child process:
// servers.ts re-runs the bench entry (index.ts) with `--baseline-server <spec.json>`.
import fs from 'node:fs';
import http from 'node:http';

// ─────────────────────────── bare yoga baseline (child process mode) ───────────────────────────

export async function runBaselineServer(specFile: string): Promise<void> {
  const { createSchema, createYoga } = await import('graphql-yoga');
  const spec = JSON.parse(fs.readFileSync(specFile, 'utf8')) as BaselineSpec;
  interface MemJob {
    name: string;
    state: string;
    project: { name: string } | null;
    seq: number;
  }
  const jobs: MemJob[] = spec.jobs.map((j, seq) => ({
    name: j.name,
    state: j.state,
    project: j.project ? { name: j.project } : null,
    seq,
  }));
  const queue = { name: spec.queueName, usage: spec.usage, jobs };
  const tenants = new Map([[spec.slug, { slug: spec.slug, queues: [queue] }]]);
  const schema = createSchema<Record<string, unknown>>({
    typeDefs: /* GraphQL */ `
      type Query { tenant(slug: String!): Tenant! }
      type Tenant { slug: String! queues: [Queue!]! }
      type QueueUsage { flavor: String! used: Float! borrowed: Float! }
      type Project { name: String! }
      type JobPosition { inQueue: Int queueLength: Int }
      enum JobState { PENDING ADMITTED RUNNING SUCCEEDED FAILED CANCELLED }
      type Job { name: String! state: JobState! project: Project position: JobPosition }
      type QueueJobsConnectionEdge { cursor: String! node: Job! }
      type PageInfo { hasNextPage: Boolean! hasPreviousPage: Boolean! }
      type QueueJobsConnection { edges: [QueueJobsConnectionEdge!]! pageInfo: PageInfo! }
      type Queue { name: String! usage: [QueueUsage!]! pendingCount: Int! jobs(first: Int, last: Int): QueueJobsConnection! }
    `,
    resolvers: {
      Query: {
        tenant: (_: unknown, { slug }: { slug: string }) => {
          const t = tenants.get(slug);
          if (!t) throw new Error('not found');
          return t;
        },
      },
      Queue: {
        pendingCount: (q: typeof queue) => q.jobs.filter((j) => j.state === 'PENDING').length,
        jobs: (q: typeof queue, { first, last }: { first?: number; last?: number }) => {
          const all = q.jobs;
          const page =
            last != null ? all.slice(Math.max(0, all.length - last)) : all.slice(0, first ?? all.length);
          return {
            edges: page.map((node) => ({ cursor: String(node.seq), node: { ...node, queue: q } })),
            pageInfo: { hasNextPage: false, hasPreviousPage: page.length < all.length },
          };
        },
      },
      Job: {
        // Computed per job from memory, like Fairway computes it per job from the scheduler.
        position: (j: MemJob & { queue: typeof queue }) => {
          if (j.state !== 'PENDING') return null;
          const pending = j.queue.jobs.filter((o) => o.state === 'PENDING');
          return {
            inQueue: 1 + pending.findIndex((o) => o === j || o.seq === j.seq),
            queueLength: pending.length,
          };
        },
      },
    },
  });
  const yoga = createYoga({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: false,
    landingPage: false,
    logging: false,
  });
  const server = http.createServer(yoga);
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    console.log(`BASELINE_LISTENING http://127.0.0.1:${port}/graphql`);
  });
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}

export interface BaselineSpec {
  slug: string;
  queueName: string;
  usage: { flavor: string; used: number; borrowed: number }[];
  jobs: { name: string; state: string; project: string | null }[];
}
