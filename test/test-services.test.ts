import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freePort, REPO_ROOT } from './helpers/process.js';

/**
 * Tests that need PostgreSQL or Redis can never vanish: without the services they show as
 * skipped with the reason, and under CI=true a missing (unset or not answering) service
 * fails the run. Checked by running a fixture suite in a child vitest with a controlled
 * environment.
 */
function runFixture(env: Record<string, string | undefined>) {
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    CI: undefined,
    TEST_DATABASE_URL: undefined,
    TEST_REDIS_URL: undefined,
    ...env,
  };
  for (const key of Object.keys(childEnv)) if (childEnv[key] === undefined) delete childEnv[key];
  const result = spawnSync(
    'npx',
    ['vitest', 'run', '--config', 'test/fixtures/services/vitest.config.ts', '--reporter', 'verbose'],
    {
      cwd: REPO_ROOT,
      env: childEnv,
      encoding: 'utf8',
      timeout: 120_000,
    },
  );
  return {
    status: result.status,
    output: `${result.stdout}\n${result.stderr}`.replace(/\x1b\[[0-9;]*m/g, ''),
  };
}

describe('suites that need services', () => {
  it('outside CI, without the services: skipped, counted, and the reason named', () => {
    const run = runFixture({});
    expect(run.status, run.output).toBe(0);
    expect(run.output).toContain('[skipped: set TEST_DATABASE_URL and TEST_REDIS_URL to run it]');
    expect(run.output).toContain('[skipped: set TEST_DATABASE_URL to run it]');
    expect(run.output).toMatch(/2 skipped/);
    expect(run.output).toMatch(/1 passed/);
  });

  it('under CI=true, without the services: the run fails and says why', () => {
    const run = runFixture({ CI: 'true' });
    expect(run.status, run.output).not.toBe(0);
    expect(run.output).toContain('TEST_DATABASE_URL is not set');
  });

  it('under CI=true, with a PostgreSQL that does not answer: the run fails before any test', async () => {
    const deadPort = await freePort();
    const run = runFixture({
      CI: 'true',
      TEST_DATABASE_URL: `postgres://postgres@127.0.0.1:${deadPort}/test`,
      TEST_REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    });
    expect(run.status, run.output).not.toBe(0);
    expect(run.output).toContain('PostgreSQL at TEST_DATABASE_URL does not answer');
    expect(run.output).toContain('Redis at TEST_REDIS_URL does not answer');
  });
});
