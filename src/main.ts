import { ConfigError, loadConfig } from './config.js';
import { buildApp } from './server/app.js';
import { startDemoTrickle } from './server/demo-trickle.js';
import { demoCredentialsPath, readDemoCredentials, seedDemo, type DemoCredential } from './server/demo.js';

async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const app = await buildApp({ config });
  const where = config.database.dialect === 'sqlite' ? `SQLite ${config.database.file}` : 'PostgreSQL';
  let credentials: DemoCredential[] | null = null;
  if (config.demo) {
    const seeded = await seedDemo(app.orm, config.dataDir);
    if (seeded) await app.scheduler.rebuild();
    credentials = seeded ?? readDemoCredentials(config.dataDir);
  }
  const { url } = await app.listen();
  const stopTrickle = config.demo && config.demoTrickle ? startDemoTrickle(app) : () => undefined;
  console.log(`Fairway is serving on ${url}  (database: ${where})`);
  if (config.graphiql) console.log(`  GraphiQL: open ${url} in a browser; subscriptions use ws://${url.replace(/^https?:\/\//, '')}`);
  console.log(`  Health: ${url.replace('/graphql', '/health')}   Readiness: ${url.replace('/graphql', '/ready')}`);
  if (credentials) {
    console.log(`\nDemo API tokens (also in ${demoCredentialsPath(config.dataDir)}):`);
    for (const c of credentials) console.log(`  ${c.role.padEnd(14)} ${(c.tenant ?? '(platform)').padEnd(20)} ${c.email.padEnd(24)} ${c.token}`);
    const sample = credentials.find((c) => c.role === 'TENANT_ADMIN');
    if (sample) {
      console.log(`\nTry:\n  curl -s ${url} -H 'content-type: application/json' -H 'authorization: Bearer ${sample.token}' \\\n    -d '{"query":"{ tenant(slug: \\"${sample.tenant}\\") { queues { name usage { flavor used borrowed } pendingCount } jobs(last: 5) { edges { node { name state position { inQueue } pendingReason { code } } } } } }"}'`);
    }
    if (config.demoTrickle) console.log(`\nA demo job is submitted every few seconds (simulated cluster at ${config.simulatedTimeScale}x speed; FAIRWAY_DEMO_TRICKLE=false stops it).`);
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
  console.error('[fairway] failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
