// The load side, in the bench's own (parent) process: keep-alive HTTP posts, GraphQL over HTTP,
// graphql-ws clients, and the closed-loop load generator of part 1.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { cpuSeconds, sched, schedShare } from './process-stats.js';
import { pct } from './report.js';
import type { Started } from './servers.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ─────────────────────────── HTTP client ───────────────────────────

export function post(
  agent: http.Agent,
  url: URL,
  token: string | null,
  body: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export const sharedAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function gql<T = any>(
  server: Started,
  token: string | null,
  query: string,
  variables: Record<string, unknown> = {},
  agent = sharedAgent,
): Promise<T> {
  const res = await post(agent, new URL(server.url), token, JSON.stringify({ query, variables }));
  const body = JSON.parse(res.text) as { data?: T; errors?: unknown[] };
  if (body.errors?.length || !body.data)
    throw new Error(`GraphQL error (${res.status}): ${res.text.slice(0, 500)}`);
  return body.data;
}

export function wsClient(server: Started, token: string): Client {
  return createClient({
    url: server.url.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    lazy: true,
    retryAttempts: 0,
    keepAlive: 0,
  });
}

// ─────────────────────────── closed loop (part 1) ───────────────────────────

export interface LoadResult {
  ok: number;
  errors: number;
  seconds: number;
  p50: number;
  p99: number;
  /** Server CPU ms (all threads) per request answered in the measured window, when given its pid. */
  cpuMsPerRequest: number;
  /** The server's JS thread on-CPU / waiting-for-CPU share of the measured window. */
  share: string;
}

/**
 * Closed loop: `concurrency` workers each send the next request when the previous one is
 * answered. Counted: requests answered inside the measured window (after the warm-up); the
 * server's CPU time (`pid`) is read at the window's two ends, so CPU per request is exact.
 */
export async function closedLoop(
  url: string,
  token: string | null,
  body: string,
  concurrency: number,
  warmupMs: number,
  durationMs: number,
  pid?: number,
): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  let measuring = false;
  let stopAt = Infinity;
  const worker = async () => {
    while (performance.now() < stopAt) {
      const t0 = performance.now();
      let good = false;
      try {
        const res = await post(agent, target, token, body);
        good = res.status === 200 && !res.text.includes('"errors"');
      } catch {
        good = false;
      }
      const t1 = performance.now();
      if (measuring && t1 <= stopAt) {
        if (good) {
          ok++;
          latencies.push(t1 - t0);
        } else errors++;
      }
    }
  };
  const start = performance.now();
  stopAt = start + warmupMs + durationMs;
  const workers = Array.from({ length: concurrency }, worker);
  await sleep(warmupMs);
  measuring = true;
  const measuredFrom = performance.now();
  const cpu0 = pid ? cpuSeconds(pid) : NaN;
  const sched0 = pid ? sched(pid) : null;
  await sleep(Math.max(0, stopAt - performance.now()));
  const cpu = pid ? cpuSeconds(pid) - cpu0 : NaN;
  const share = pid && sched0 ? schedShare(sched0, sched(pid), performance.now() - measuredFrom) : '—';
  await Promise.all(workers);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const seconds = (stopAt - measuredFrom) / 1000;
  return {
    ok,
    errors,
    seconds,
    p50: pct(latencies, 0.5),
    p99: pct(latencies, 0.99),
    cpuMsPerRequest: (1000 * cpu) / Math.max(1, ok),
    share,
  };
}
