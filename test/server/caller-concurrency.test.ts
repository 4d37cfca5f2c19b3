// One caller's requests take turns (plugins/useCallerConcurrency.ts): over a real port, a
// yoga server whose resolver waits on a gate the test opens, so "in flight" is exact.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSchema, createYoga } from 'graphql-yoga';
import { afterEach, expect, it } from 'vitest';
import { type CallerConcurrencyOptions, useCallerConcurrency } from '../../plugins/useCallerConcurrency.js';
import { clientAddressBehind } from '../../src/server/rate-limits/client-address.js';

let server: Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = null;
});

/** A server whose `slow` field answers when the test releases it; `started` counts executions. */
async function start(options: Partial<CallerConcurrencyOptions>) {
  const gates: Array<() => void> = [];
  let started = 0;
  const yoga = createYoga({
    schema: createSchema({
      typeDefs: 'type Query { slow: Int! fast: Int! }',
      resolvers: {
        Query: {
          slow: () => {
            started++;
            return new Promise<number>((resolve) => gates.push(() => resolve(1)));
          },
          fast: () => 2,
        },
      },
    }),
    plugins: [
      useCallerConcurrency({
        maxInFlight: 1,
        maxQueued: 1,
        maxWaitMs: 5_000,
        clientAddress: clientAddressBehind(0),
        graphqlEndpoint: '/graphql',
        ...options,
      }),
    ],
  });
  server = createServer(yoga);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server!.address() as AddressInfo).port}/graphql`;
  const ask = (token: string, field: 'slow' | 'fast') =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: `{ ${field} }` }),
    }).then(async (r) => ({
      status: r.status,
      retryAfter: r.headers.get('retry-after'),
      body: (await r.json()) as {
        data?: Record<string, number>;
        errors?: { extensions: { code: string; limit: string } }[];
      },
    }));
  const until = async (what: () => boolean) => {
    for (let i = 0; i < 200 && !what(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(what()).toBe(true);
  };
  return {
    ask,
    until,
    release: () => gates.shift()?.(),
    started: () => started,
    waiting: () => gates.length,
  };
}

it("queues a caller's next request behind its running one, refuses past the queue at once, and never holds up another caller", async () => {
  const s = await start({});
  const first = s.ask('token-a', 'slow');
  await s.until(() => s.started() === 1);
  const second = s.ask('token-a', 'slow'); // waits its turn, not refused
  const third = await s.ask('token-a', 'fast'); // the queue (1) is full: refused at once
  expect(third.status).toBe(429);
  expect(third.retryAfter).toBe('1');
  expect(third.body.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', limit: 'concurrency' });

  // Another caller runs while token-a's slot is held.
  expect((await s.ask('token-b', 'fast')).body.data).toEqual({ fast: 2 });
  expect(s.started()).toBe(1); // token-a's second request has not run yet

  s.release();
  expect((await first).body.data).toEqual({ slow: 1 });
  await s.until(() => s.started() === 2); // the slot passed to the waiting request
  s.release();
  expect((await second).body.data).toEqual({ slow: 1 });
  // Every slot was given back: token-a runs again at once.
  expect((await s.ask('token-a', 'fast')).body.data).toEqual({ fast: 2 });
});

it('refuses a request that waited longer than maxWaitMs, and the running one still completes', async () => {
  const s = await start({ maxWaitMs: 100 });
  const first = s.ask('token-a', 'slow');
  await s.until(() => s.started() === 1);
  const waited = await s.ask('token-a', 'fast');
  expect(waited.status).toBe(429);
  expect(waited.body.errors?.[0]?.extensions.code).toBe('RATE_LIMITED');
  s.release();
  expect((await first).body.data).toEqual({ slow: 1 });
  expect((await s.ask('token-a', 'fast')).body.data).toEqual({ fast: 2 });
});

it('gives the slot back when a client goes away while its request runs', async () => {
  const s = await start({});
  const gone = s.ask('token-a', 'slow').catch(() => null);
  await s.until(() => s.started() === 1);
  server!.closeAllConnections(); // the client's connection drops mid-request
  await gone;
  // The abandoned resolver is still pending, yet its caller's slot is free again.
  expect((await s.ask('token-a', 'fast')).body.data).toEqual({ fast: 2 });
  s.release();
});
