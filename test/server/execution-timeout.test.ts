// A query that runs too long is answered with a typed error; a mutation is never cut short
// (its answer must not claim a failure for a change that was made). Over a real port.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSchema, createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useExecutionTimeout } from '../../plugins/useExecutionTimeout.js';
import { load } from '../../src/config/index.js';

let server: Server;
let url: string;
let mutationsDone = 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  const yoga = createYoga({
    schema: createSchema({
      typeDefs: 'type Query { slow: Int! quick: Int! } type Mutation { slowWrite: Int! }',
      resolvers: {
        Query: { slow: () => sleep(2_000).then(() => 1), quick: () => 2 },
        Mutation: { slowWrite: () => sleep(300).then(() => ++mutationsDone) },
      },
    }),
    plugins: [useExecutionTimeout({ maxExecutionMs: 150 })],
  });
  server = createServer(yoga);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const post = (query: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  }).then(
    (r) =>
      r.json() as Promise<{
        data?: Record<string, number> | null;
        errors?: { message: string; extensions: Record<string, unknown> }[];
      }>,
  );

it('answers a query past the limit with BAD_USER_INPUT naming the limit, promptly', async () => {
  const started = Date.now();
  const res = await post('{ slow }');
  expect(Date.now() - started).toBeLessThan(1_500);
  expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'execution-time' });
  expect(res.errors?.[0]?.message).toMatch(/longer than 150 ms/);
  expect(await post('{ quick }')).toEqual({ data: { quick: 2 } });
});

it('lets a mutation run to its end past the limit', async () => {
  expect(await post('mutation { slowWrite }')).toEqual({ data: { slowWrite: 1 } });
  expect(mutationsDone).toBe(1);
});

it('reads FAIRWAY_MAX_EXECUTION_MS, default 10 s', () => {
  expect(load({ NODE_ENV: 'production' }).limits.maxExecutionMs).toBe(10_000);
  const config = load({ NODE_ENV: 'test', FAIRWAY_MAX_EXECUTION_MS: '2500' });
  expect(config.limits.maxExecutionMs).toBe(2_500);
  expect(() => load({ NODE_ENV: 'test', FAIRWAY_MAX_EXECUTION_MS: '0' })).toThrow(/FAIRWAY_MAX_EXECUTION_MS/);
});
