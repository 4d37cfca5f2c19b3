import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { load } from '../../src/config/index.js';
import { freePort, gqlData, killAllServers, REPO_ROOT, startServer } from '../helpers/process.js';

/**
 * Production defaults and the first hour: in production the server seeds no demo and prints
 * no token; the first platform admin comes from `npm run bootstrap`, whose token then works
 * against the server; a busy port fails start-up with one line before anything is written.
 */

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a command as an operator would run it: nothing of the test runner's. */
function cleanEnv(extra: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v === undefined ||
      k.startsWith('VITEST') ||
      k === 'NODE_OPTIONS' ||
      k === 'DATABASE_URL' ||
      k === 'REDIS_URL' ||
      k.startsWith('FAIRWAY_')
    )
      continue;
    env[k] = v;
  }
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

function run(
  script: string,
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 30_000,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      cwd: REPO_ROOT,
      env: cleanEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not exit within ${timeoutMs} ms; output:\n${stdout}${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const dirs: string[] = [];
function freshDir(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `fairway-${label}-`));
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  await killAllServers();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

const STACK_LINE = /^\s+at /m;

describe('demo defaults per NODE_ENV', () => {
  it.each([
    [{}, true],
    [{ NODE_ENV: 'development' }, true],
    [{ NODE_ENV: 'test' }, true],
    [{ NODE_ENV: 'production' }, false],
    [{ NODE_ENV: 'production', FAIRWAY_DEMO: 'true', FAIRWAY_DEMO_TRICKLE: 'true' }, true],
    [{ NODE_ENV: 'development', FAIRWAY_DEMO: 'false', FAIRWAY_DEMO_TRICKLE: 'false' }, false],
  ])('%o: demo and its trickle %s', (env, on) => {
    const config = load(env);
    expect(config.demo.enabled).toBe(on);
    expect(config.demo.trickle).toBe(on);
  });

  it('the trickle can be turned off alone, and production metering keeps its production interval', () => {
    expect(load({ FAIRWAY_DEMO_TRICKLE: 'false' })).toMatchObject({
      demo: { enabled: true, trickle: false },
      metering: { intervalMs: 15_000 },
    });
    expect(load({ NODE_ENV: 'production' }).metering.intervalMs).toBe(60_000);
  });
});

describe('bootstrap: the first platform admin of a production installation', () => {
  it('creates one admin whose token works against a production server that seeded nothing; a second run refuses', async () => {
    const dataDir = freshDir('bootstrap');
    const env = { NODE_ENV: 'production', FAIRWAY_DATA_DIR: dataDir };
    const first = await run(
      'src/cli/bootstrap.ts',
      ['--email', 'Root@Example.com', '--name', 'Rita Root'],
      env,
    );
    expect(first.code, first.stderr).toBe(0);
    const token = first.stdout.trim();
    // Only the token on stdout, so `TOKEN=$(npm run -s bootstrap -- ...)` works.
    expect(token).toMatch(/^\S+$/);

    const db = new Database(path.join(dataDir, 'fairway.db'), { readonly: true });
    try {
      expect(db.prepare('select email, name from users where is_platform_admin = 1').all()).toEqual([
        { email: 'root@example.com', name: 'Rita Root' },
      ]);
      const tokens = db.prepare('select token_hash from api_tokens').all() as { token_hash: string }[];
      expect(tokens).toHaveLength(1);
      expect(tokens[0]!.token_hash).not.toContain(token);
    } finally {
      db.close();
    }

    const server = await startServer({
      dataDir,
      label: 'production',
      env: { NODE_ENV: 'production', FAIRWAY_DEMO: undefined, FAIRWAY_DEMO_TRICKLE: undefined },
    });
    try {
      const output = server.output();
      expect(output).not.toMatch(/Demo API tokens/);
      expect(output).not.toContain('fwt_');
      expect(fs.existsSync(path.join(dataDir, 'demo-credentials.json'))).toBe(false);
      const data = await gqlData(
        server.url,
        token,
        '{ viewer { name email isPlatformAdmin } tenants(first: 5) { edges { node { slug } } } flavors { name } }',
      );
      expect(data.viewer).toEqual({ name: 'Rita Root', email: 'root@example.com', isPlatformAdmin: true });
      expect(data.tenants.edges).toEqual([]);
      expect(data.flavors).toEqual([]);
    } finally {
      await server.kill('SIGTERM');
    }

    const second = await run('src/cli/bootstrap.ts', ['--email', 'other@example.com'], env);
    expect(second.code).toBe(1);
    expect(second.stdout).toBe('');
    expect(second.stderr).toMatch(/a platform admin already exists/);
    expect(second.stderr).not.toMatch(STACK_LINE);
    const after = new Database(path.join(dataDir, 'fairway.db'), { readonly: true });
    try {
      expect(after.prepare('select count(*) as n from users').get()).toEqual({ n: 1 });
      expect(after.prepare('select count(*) as n from api_tokens').get()).toEqual({ n: 1 });
    } finally {
      after.close();
    }
  }, 90_000);

  it.each([
    [[], /--email is required/],
    [['--email', 'not-an-email'], /--email must be an email address/],
    [['--email', 'a@example.com', '--expires-in-days', 'forever'], /--expires-in-days/],
    [['--email', 'a@example.com', '--bogus'], /Unknown option '--bogus'/],
  ])(
    '%o: refused with a message and the usage, no stack trace, nothing written',
    async (args, message) => {
      const dataDir = freshDir('bootstrap-bad');
      const result = await run('src/cli/bootstrap.ts', args, {
        NODE_ENV: 'production',
        FAIRWAY_DATA_DIR: dataDir,
      });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(message);
      expect(result.stderr).toMatch(/usage: npm run bootstrap/);
      expect(result.stderr).not.toMatch(STACK_LINE);
      expect(fs.existsSync(path.join(dataDir, 'fairway.db'))).toBe(false);
    },
    30_000,
  );
});

describe('a busy port', () => {
  it('ends start-up with one line and status 1 before the database is created or the demo seeded', async () => {
    const port = await freePort();
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const dataDir = freshDir('busy-port');
      // The demo on (as in development): it must not be seeded into a database nobody serves.
      const result = await run('src/main.ts', [], {
        NODE_ENV: 'development',
        PORT: String(port),
        HOST: '127.0.0.1',
        FAIRWAY_DATA_DIR: dataDir,
        FAIRWAY_DEMO: 'true',
        FAIRWAY_DEMO_TRICKLE: 'false',
      });
      const output = result.stdout + result.stderr;
      expect(result.code, output).toBe(1);
      expect(result.stderr.trim()).toBe(`[fairway] port ${port} is already in use (set PORT)`);
      expect(output).not.toMatch(STACK_LINE);
      expect(output).not.toMatch(/Demo API tokens|serving on/);
      expect(fs.readdirSync(dataDir)).toEqual([]);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  }, 30_000);
});
