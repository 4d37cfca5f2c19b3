// The gateway under test as a child process (`node --import tsx src/main.ts`, what `npm start`
// runs) on SQLite in a temp FAIRWAY_DATA_DIR, seeded with the demo before start; and reading
// what it recorded (admissions, job events) straight from its database file afterwards.
import path from 'node:path';
import Database from 'better-sqlite3';
import { demoTokens, spawnAndWait, stopper } from '../api/servers.js';

export interface Gateway {
  url: string;
  pid: number;
  dataDir: string;
  tokens: Record<string, string>;
  stderr: string[];
  stop(): Promise<void>;
}

/**
 * The demo (as `npm start` seeds it) written before start, plus `extraSimulatedH100Nodes`
 * simulated H100 nodes in its shared pool (the simulated baseline's cluster; the Kubernetes
 * gateway replaces the demo's simulated nodes with the API server's).
 */
async function seed(dataDir: string, extraSimulatedH100Nodes: number): Promise<void> {
  const { openDatabase, migrate } = await import('../../src/persistence/orm.js');
  const { seedDemo } = await import('../../src/server/demo/seed.js');
  const { ClusterNode, Flavor, NodePool } = await import('../../src/persistence/cluster/entities.js');
  const { systemEntityManager } = await import('../../src/persistence/tenant-filter.js');
  const orm = await openDatabase({ database: { dialect: 'sqlite', file: path.join(dataDir, 'fairway.db') } });
  try {
    await migrate(orm);
    await seedDemo(orm, dataDir);
    await systemEntityManager(orm).transactional(async (em) => {
      const flavor = await em.findOneOrFail(Flavor, { name: 'h100-80g' });
      const pool = await em.findOneOrFail(NodePool, { name: 'shared' });
      for (let i = 0; i < extraSimulatedH100Nodes; i++) {
        em.create(ClusterNode, {
          name: `bench-h100-${String(i + 1).padStart(3, '0')}`,
          pool,
          flavor,
          gpus: 8,
          cpu: 192_000,
          memory: 1_048_576,
        });
      }
    });
  } finally {
    await orm.close(true);
  }
}

export async function startGateway(
  dataDir: string,
  env: Record<string, string>,
  extraSimulatedH100Nodes = 0,
): Promise<Gateway> {
  await seed(dataDir, extraSimulatedH100Nodes);
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    FAIRWAY_DATA_DIR: dataDir,
    FAIRWAY_DEMO: 'true',
    FAIRWAY_DEMO_TRICKLE: 'false',
    NODE_ENV: 'production',
    // A burst from one token measures the backend, not the front door's limits (as bench:api).
    FAIRWAY_RATE_LIMITS: process.env.FAIRWAY_RATE_LIMITS ?? 'false',
    ...env,
  };
  // The embedded default: no external database or Redis even if the caller's shell has them.
  delete childEnv.DATABASE_URL;
  delete childEnv.REDIS_URL;
  const { child, match, stderr } = await spawnAndWait(
    ['--import', 'tsx', 'src/main.ts'],
    childEnv,
    /serving on (http:\/\/\S+\/graphql)/,
    'the gateway',
  );
  return {
    url: match[1]!,
    pid: child.pid!,
    dataDir,
    tokens: demoTokens(dataDir),
    stderr,
    stop: stopper(child),
  };
}

/** A MikroORM datetime column as SQLite holds it (ms epoch number or a date string) → ms epoch. */
function ms(value: unknown): number {
  return typeof value === 'number'
    ? value
    : typeof value === 'bigint'
      ? Number(value)
      : new Date(String(value)).getTime();
}

export interface JobTimes {
  admittedAt: number;
  startedAt?: number;
}

/** A read-only view of the gateway's database while it runs (WAL: readers do not block it). */
export class GatewayDb {
  private readonly db: Database.Database;
  constructor(dataDir: string) {
    this.db = new Database(path.join(dataDir, 'fairway.db'), { readonly: true, fileMustExist: true });
  }
  count(eventType: 'ADMITTED' | 'STARTED'): number {
    return (
      this.db.prepare('select count(*) as n from job_events where type = ?').get(eventType) as { n: number }
    ).n;
  }
  /** Per job: `jobs.admission.at` (the scheduler's decision time) and the STARTED event's time. */
  times(): Map<string, JobTimes> {
    const out = new Map<string, JobTimes>();
    for (const row of this.db.prepare('select id, admission from jobs where admission is not null').all() as {
      id: string;
      admission: string;
    }[]) {
      out.set(row.id, { admittedAt: Number((JSON.parse(row.admission) as { at: number }).at) });
    }
    for (const row of this.db.prepare(`select job_id, at from job_events where type = 'STARTED'`).all() as {
      job_id: string;
      at: unknown;
    }[]) {
      const t = out.get(row.job_id);
      if (t) t.startedAt = Math.min(t.startedAt ?? Infinity, ms(row.at));
    }
    return out;
  }
  close(): void {
    this.db.close();
  }
}
