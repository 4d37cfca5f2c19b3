// The usage bench's harness, without the command line: build the scenario once, load it into
// each database, check the rollup read and the raw-ledger baseline agree, time both, and (on
// PostgreSQL) keep the plans. test/bench/usage-bench.test.ts runs it on a tiny scenario.

import { gatewayCpuMs, graphqlQuery, startGateway, tenantAdminToken } from './graphql.js';
import { type Dialect, knexOf, type LoadStats, loadScenario, openScratch } from './load.js';
import { measure, type Timing } from './measure.js';
import { baselineQuery, compareCells, serviceQuery, type UsageWindow } from './queries.js';
import { buildScenario, DAY_MS, DEFAULT_SCENARIO, type ScenarioOptions } from './scenario.js';

export interface UsageBenchOptions {
  dialects: Dialect[];
  scenario: Partial<ScenarioOptions>;
  /** Server of the PostgreSQL scratch database (any database on it; the scratch one is created beside it). */
  postgresUrl: string;
  postgresDatabase: string;
  /** Timed calls after `warmup` untimed ones; the baseline gets its own (slower) count. */
  iterations: number;
  baselineIterations: number;
  warmup: number;
  /** Also time the query through the graph over HTTP (a gateway started on the scratch database). */
  graphql: boolean;
  /** Keep the scratch databases for a look afterwards. */
  keep: boolean;
  progress: (line: string) => void;
}

export interface DialectResult {
  dialect: Dialect;
  where: string;
  load: LoadStats;
  /** (project, day) cells the query answers. */
  cells: number;
  /** Differences between the rollup read and the baseline (must be empty). */
  mismatches: string[];
  service: Timing;
  baseline: Timing;
  /** The GraphQL `usage` field over HTTP (null when not asked for, or the gateway failed: see graphqlError). */
  graphql: Timing | null;
  graphqlError: string | null;
  /** EXPLAIN (ANALYZE, BUFFERS) of the rollup statement readUsage sent, and of the baseline (PostgreSQL). */
  plans: { service: string; baseline: string } | null;
}

export const DEFAULT_OPTIONS: UsageBenchOptions = {
  dialects: ['sqlite', 'postgresql'],
  scenario: {},
  postgresUrl: 'postgres://postgres@127.0.0.1:5432/postgres',
  postgresDatabase: 'fw_bench_usage',
  iterations: 50,
  baselineIterations: 10,
  warmup: 3,
  graphql: true,
  keep: false,
  progress: () => {},
};

export async function runUsageBench(partial: Partial<UsageBenchOptions> = {}): Promise<DialectResult[]> {
  const opts = { ...DEFAULT_OPTIONS, ...partial };
  const scenarioOptions = { ...DEFAULT_SCENARIO, ...opts.scenario };
  const t = performance.now();
  const scenario = buildScenario(scenarioOptions);
  opts.progress(
    `scenario: ${scenario.jobs.length} jobs, ${scenario.rows.toLocaleString('en')} ledger rows (${(performance.now() - t).toFixed(0)} ms)`,
  );
  const results: DialectResult[] = [];
  for (const dialect of opts.dialects) {
    const note = (line: string) => opts.progress(`${dialect}: ${line}`);
    const db = await openScratch(dialect, {
      adminUrl: opts.postgresUrl,
      database: opts.postgresDatabase,
      keep: opts.keep,
    });
    try {
      note(`schema migrated in ${db.where}`);
      const { ids, stats } = await loadScenario(db, scenario, note);
      const window: UsageWindow = {
        tenantId: ids.tenants[0]!,
        from: new Date(scenarioOptions.from),
        to: new Date(scenarioOptions.from + scenarioOptions.days * DAY_MS),
      };
      const service = serviceQuery(db.orm, window, ids.users[0]!);
      const baseline = baselineQuery(db.orm, dialect, window);
      const served = await service();
      const mismatches = compareCells(served, await baseline());
      note(
        `${served.length} (project, day) cells; rollup and ledger ${mismatches.length ? `DISAGREE: ${mismatches.join('; ')}` : 'agree'}`,
      );
      const serviceTiming = await measure(db.orm, dialect, service, {
        warmup: opts.warmup,
        iterations: opts.iterations,
      });
      note(`readUsage median ${median(serviceTiming.wallMs).toFixed(2)} ms`);
      const baselineTiming = await measure(db.orm, dialect, baseline, {
        warmup: Math.min(1, opts.warmup),
        iterations: opts.baselineIterations,
      });
      note(`baseline median ${median(baselineTiming.wallMs).toFixed(1)} ms`);
      const plans = dialect === 'postgresql' ? await explainBoth(db.orm, service, baseline) : null;
      let graphql: Timing | null = null;
      let graphqlError: string | null = null;
      if (opts.graphql) {
        try {
          graphql = await overHttp(db.orm, dialect, db.url, window, ids.users[1]!, served.length, opts);
          note(`GraphQL over HTTP median ${median(graphql.wallMs).toFixed(1)} ms`);
        } catch (error) {
          graphqlError = error instanceof Error ? error.message.split('\n')[0]! : String(error);
          note(`GraphQL over HTTP failed: ${graphqlError}`);
        }
      }
      results.push({
        dialect,
        where: db.where,
        load: stats,
        cells: served.length,
        mismatches,
        service: serviceTiming,
        baseline: baselineTiming,
        graphql,
        graphqlError,
        plans,
      });
    } finally {
      await db.drop();
    }
  }
  return results;
}

/** Starts a gateway on the database, checks it answers the same number of rows, and times it. */
async function overHttp(
  orm: Parameters<typeof knexOf>[0],
  dialect: Dialect,
  url: string,
  w: UsageWindow,
  userId: string,
  cells: number,
  opts: UsageBenchOptions,
): Promise<Timing> {
  const token = await tenantAdminToken(orm, w.tenantId, userId);
  const gateway = await startGateway(url);
  try {
    const call = graphqlQuery(gateway, token, w);
    const rows = await call();
    if (rows !== cells) throw new Error(`the graph answered ${rows} rows, readUsage ${cells}`);
    return await measure(orm, dialect, call, {
      warmup: opts.warmup,
      iterations: opts.iterations,
      serverCpuMs: () => gatewayCpuMs(gateway),
    });
  } finally {
    await gateway.stop();
  }
}

export const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length
    ? s.length % 2
      ? s[(s.length - 1) / 2]!
      : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
    : NaN;
};

/** The statements each query sends (caught on knex's query event), explained with ANALYZE. */
async function explainBoth(
  orm: Parameters<typeof knexOf>[0],
  service: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
): Promise<{ service: string; baseline: string }> {
  const knex = knexOf(orm);
  const lastSelect = async (call: () => Promise<unknown>): Promise<{ sql: string; bindings: unknown[] }> => {
    const seen: { sql: string; bindings: unknown[] }[] = [];
    const listener = (q: { sql: string; bindings?: unknown[] }) => {
      if (/^\s*select/i.test(q.sql)) seen.push({ sql: q.sql, bindings: q.bindings ?? [] });
    };
    knex.on('query', listener);
    try {
      await call();
    } finally {
      knex.removeListener('query', listener);
    }
    return seen[seen.length - 1]!;
  };
  const explain = async (call: () => Promise<unknown>) => {
    const q = await lastSelect(call);
    // knex reports PostgreSQL's $n placeholders; knex.raw wants its own ? ones (in the same order).
    const sql = q.sql.replace(/\$\d+/g, '?');
    const result = (await knex.raw(`explain (analyze, buffers) ${sql}`, q.bindings as never[])) as {
      rows: { 'QUERY PLAN': string }[];
    };
    return result.rows.map((r) => r['QUERY PLAN']).join('\n');
  };
  return { service: await explain(service), baseline: await explain(baseline) };
}
