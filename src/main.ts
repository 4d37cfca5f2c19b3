import net from 'node:net';
import { ConfigError, load } from './config/index.js';
import { isDatabaseUnavailable } from './persistence/database-unavailable.js';
import { User } from './persistence/tenancy/index.js';
import { systemEntityManager } from './persistence/tenant-filter.js';
import { buildApp } from './server/app.js';
import {
  type DemoCredential,
  demoCredentialsPath,
  readDemoCredentials,
  seedDemo,
  seedDemoBudgets,
  startDemoTrickle,
} from './server/demo/index.js';

/** A start-up problem the operator fixes in the environment: one line, no stack trace, exit 1. */
class StartupError extends Error {}

function portProblem(error: unknown, port: number, host: string): StartupError | null {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'EADDRINUSE') return new StartupError(`port ${port} is already in use (set PORT)`);
  if (code === 'EACCES')
    return new StartupError(`port ${port} needs privileges this process does not have (set PORT)`);
  if (code === 'EADDRNOTAVAIL')
    return new StartupError(`host ${host} is not an address of this machine (set HOST)`);
  return null;
}

/**
 * Tries the port before the database is opened, migrated or seeded: a busy port must fail
 * start-up before anything is written, not after a demo was seeded into a new database.
 * (Another process may still take the port in between; `listen` reports that the same way.)
 */
async function checkPortFree(port: number, host: string): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (error) => reject(portProblem(error, port, host) ?? error));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/**
 * Last resort only: each source handles its own failures (requests answer
 * SERVICE_UNAVAILABLE, the scheduler pauses and resumes, the pool reconnects). What still
 * escapes is logged here, and what it does to the process is decided by what it is:
 *
 * - A rejected promise nobody awaited: logged, the server keeps running. A rejection
 *   interrupts nothing that was half done (the code that failed already returned), and
 *   Node's default (exit) would turn one forgotten `catch` during a database outage into
 *   an outage of the whole API.
 * - An uncaught exception: the stack was unwound in the middle of a callback, so in-memory
 *   state (the scheduler's core) may be half updated; Node documents that resuming is
 *   unsafe. The process exits with status 1 and its supervisor restarts it (the scheduler
 *   rebuilds from the database). The one exception is a database connection error (a
 *   driver's socket `error` event nobody listened to): it was raised inside the driver, not
 *   inside our code, so nothing of ours is half done, and exiting would make an outage worse.
 */
function installLastResortHandlers(): void {
  process.on('unhandledRejection', (reason) => {
    console.error('[fairway] unhandled rejection (kept running; fix it at its source):', reason);
  });
  process.on('uncaughtException', (error) => {
    if (isDatabaseUnavailable(error)) {
      console.error(
        '[fairway] uncaught connection error from a driver (kept running; fix it at its source):',
        error,
      );
      return;
    }
    console.error('[fairway] uncaught exception: exiting, in-memory state may be inconsistent:', error);
    process.exit(1);
  });
}

function formatRealTime(ms: number): string {
  return ms >= 60_000 ? `${+(ms / 60_000).toFixed(1)} min` : `${+(ms / 1000).toFixed(1)} s`;
}

async function main() {
  installLastResortHandlers();
  let config;
  try {
    config = load();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  // Settings that still work but will not for long: said once, before anything else.
  for (const warning of config.warnings) console.warn(`[fairway] configuration: ${warning}`);
  const { server, demo } = config;
  await checkPortFree(server.port, server.host);
  const app = await buildApp({ config });
  const where = config.database.dialect === 'sqlite' ? `SQLite ${config.database.file}` : 'PostgreSQL';
  let credentials: DemoCredential[] | null = null;
  if (demo.enabled) {
    const seeded = await seedDemo(app.orm, server.dataDir);
    if (seeded && demo.trickle) await seedDemoBudgets(app.orm);
    if (seeded) await app.scheduler.rebuild();
    credentials = seeded ?? readDemoCredentials(server.dataDir);
  }
  let url: string;
  try {
    ({ url } = await app.listen());
  } catch (error) {
    const problem = portProblem(error, server.port, server.host);
    if (!problem) throw error;
    await app.close();
    throw problem;
  }
  const stopTrickle = demo.enabled && demo.trickle ? startDemoTrickle(app) : () => undefined;
  console.log(`Fairway is serving on ${url}  (database: ${where})`);
  console.log(`  Console: open ${url.replace(/\/graphql$/, '/')} in a browser and sign in with an API token`);
  if (server.graphiql)
    console.log(
      `  GraphiQL: open ${url} in a browser; subscriptions use ws://${url.replace(/^https?:\/\//, '')}`,
    );
  console.log(
    `  Health: ${url.replace('/graphql', '/health')}   Readiness: ${url.replace('/graphql', '/ready')}`,
  );
  if (credentials) {
    console.log(`\nDemo API tokens (also in ${demoCredentialsPath(server.dataDir)}):`);
    for (const c of credentials)
      console.log(
        `  ${c.role.padEnd(14)} ${(c.tenant ?? '(platform)').padEnd(20)} ${c.email.padEnd(24)} ${c.token}`,
      );
    const sample = credentials.find((c) => c.role === 'TENANT_ADMIN');
    if (sample) {
      console.log(
        `\nTry:\n  curl -s ${url} -H 'content-type: application/json' -H 'authorization: Bearer ${sample.token}' \\\n    -d '{"query":"{ tenant(slug: \\"${sample.tenant}\\") { queues { name usage { flavor used borrowed } pendingCount } jobs(last: 5) { edges { node { name state position { inQueue } eta pendingReason { code message } } } } } }"}'`,
      );
    }
    if (demo.trickle) {
      // Say what the background jobs are, so a first job that waits (or does not) makes sense.
      console.log(
        `\nBackground demo jobs are submitted every few seconds (FAIRWAY_DEMO_TRICKLE=false stops them); Aurora's are 'experiment', the lowest class, so a 'training' job of yours goes ahead of them. The simulated cluster runs at ${config.backend.simulatedTimeScale}x speed: a declared hour takes ${formatRealTime(3_600_000 / config.backend.simulatedTimeScale)}.`,
      );
    }
  }
  if (!demo.enabled && (await systemEntityManager(app.orm).count(User, { isPlatformAdmin: true })) === 0) {
    // Production starts empty: say how to get in rather than leave the operator guessing.
    console.log('\nNo platform admin yet: create one with  npm run bootstrap -- --email you@example.com');
  }
  const shutdown = async (signal: string) => {
    console.log(`\n${signal}: shutting down`);
    stopTrickle();
    await app.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error) => {
  // A file the configuration names (the persisted-operations manifest, the Kubernetes settings) is read at
  // start.
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  if (error instanceof StartupError) {
    console.error(`[fairway] ${error.message}`);
    process.exit(1);
  }
  console.error('[fairway] failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
