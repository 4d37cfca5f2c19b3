import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DemoCredential } from '../../src/server/demo/seed.js';
import { testRateLimitEnv } from './rate-limits.js';

/** The repository root: the server is started from there, as `npm start` would. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  /** The GraphQL endpoint, as printed by the server. */
  url: string;
  port: number;
  pid: number;
  dataDir: string;
  /** Resolves when the process has exited (whatever the reason). */
  exited: Promise<Exit>;
  /** Everything the process printed so far (stdout and stderr interleaved). */
  output(): string;
  /** Sends a signal and waits for the exit. SIGKILL by default: a crash, not a shutdown. */
  kill(signal?: NodeJS.Signals): Promise<Exit>;
  /** Demo tokens from `<dataDir>/demo-credentials.json` (written by the seed). */
  credentials(): DemoCredential[];
}

export interface StartServerOptions {
  dataDir: string;
  /** Extra environment (DATABASE_URL, REDIS_URL, PGAPPNAME, …); `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** How long to wait for the "serving on" line. */
  timeoutMs?: number;
  /** A name for error messages. */
  label?: string;
}

const live = new Set<ChildProcess>();
// A test runner that dies (or a failed hook) must not leave servers behind.
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** A TCP port that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts the real server (`src/main.ts`, through tsx) as a child process and waits for its
 * "Fairway is serving on …" line. The demo is on (the seed is a no-op on a seeded database),
 * the demo trickle is off and the simulated cluster runs 1000× faster than declared time.
 */
export async function startServer(options: StartServerOptions): Promise<ServerProcess> {
  const label = options.label ?? 'fairway';
  const timeoutMs = options.timeoutMs ?? 30_000;
  const port = await freePort();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    // Nothing of the test runner's own configuration leaks into the server.
    if (
      v === undefined ||
      k.startsWith('VITEST') ||
      k === 'NODE_OPTIONS' ||
      k === 'DATABASE_URL' ||
      k === 'REDIS_URL'
    )
      continue;
    env[k] = v;
  }
  // The test suite's rate-limit budgets and a key prefix of this server's own (rate-limits.ts), unless the
  // runner set them.
  for (const [k, v] of Object.entries(testRateLimitEnv())) env[k] ??= v;
  Object.assign(env, {
    NODE_ENV: 'test',
    PORT: String(port),
    HOST: '127.0.0.1',
    FAIRWAY_DATA_DIR: options.dataDir,
    FAIRWAY_DEMO: 'true',
    FAIRWAY_DEMO_TRICKLE: 'false',
    FAIRWAY_SIM_TIME_SCALE: '1000',
    FAIRWAY_GRAPHIQL: 'false',
  });
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let output = '';
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${label} did not print "serving on" within ${timeoutMs} ms; output:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Fairway is serving on (http:\/\/\S+\/graphql)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((exit) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited before serving (${JSON.stringify(exit)}); output:\n${output}`));
    });
  });
  return {
    url,
    port,
    pid: child.pid!,
    dataDir: options.dataDir,
    exited,
    output: () => output,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    credentials() {
      const file = path.join(options.dataDir, 'demo-credentials.json');
      return (JSON.parse(fs.readFileSync(file, 'utf8')) as { credentials: DemoCredential[] }).credentials;
    },
  };
}

/** Kills every server this module started that is still alive, and waits for them. */
export async function killAllServers(): Promise<void> {
  const waits = [...live].map(
    (child) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  );
  await Promise.all(waits);
}

export function tokenOf(
  credentials: DemoCredential[],
  tenant: string | null,
  role: DemoCredential['role'],
): string {
  const found = credentials.find((c) => c.tenant === tenant && c.role === role);
  if (!found) throw new Error(`no demo credential for ${tenant ?? '(platform)'}/${role}`);
  return found.token;
}

export interface GqlResult<T = any> {
  data?: T | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/** One GraphQL request over HTTP. Network failures (a killed server) reject. */
export async function gql<T = any>(
  url: string,
  token: string | null,
  query: string,
  variables?: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<GqlResult<T>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ query, variables }),
    signal,
  });
  return (await response.json()) as GqlResult<T>;
}

/** Like `gql`, but throws on GraphQL errors. */
export async function gqlData<T = any>(
  url: string,
  token: string | null,
  query: string,
  variables?: Record<string, unknown>,
): Promise<T> {
  const result = await gql<T>(url, token, query, variables);
  if (result.errors?.length || !result.data)
    throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
  return result.data;
}

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 10_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(
    `${what}: not reached within ${timeoutMs} ms${lastError ? ` (last error: ${String(lastError)})` : ''}`,
  );
}
