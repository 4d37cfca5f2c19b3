import { envelop, useEngine, useSchema } from '@envelop/core';
import {
  execute,
  type GraphQLError,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
  specifiedRules,
  subscribe,
  validate,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD } from '../../bench/api/dashboard-throughput.js';
import { useGraphqlJit } from '../../plugins/useGraphqlJit.js';
import { load } from '../../src/config/index.js';
import { createMaskError } from '../../src/server/errors.js';
import { codesOf, startTestApp, type TestApp } from '../helpers/harness.js';

const tiny = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      hello: { type: GraphQLString, resolve: () => 'world' },
      broken: {
        type: GraphQLString,
        resolve: () => {
          throw new Error('secret internals');
        },
      },
    },
  }),
});

/** graphql-jit's results carry their serializer: the one sign, from outside, of which executor ran. */
async function run(
  plugins: Parameters<typeof envelop>[0]['plugins'],
  text: string,
  operationName?: string,
): Promise<{ jit: boolean; result: Record<string, unknown> }> {
  const getEnveloped = envelop({
    plugins: [
      useEngine({ parse, validate, execute, subscribe, specifiedRules }),
      useSchema(tiny),
      ...plugins,
    ],
  });
  const { execute: run, schema, contextFactory } = getEnveloped();
  const document = documents.get(text) ?? parse(text);
  documents.set(text, document);
  const result = (await run({
    schema,
    document,
    operationName,
    contextValue: await contextFactory(),
  })) as Record<string, unknown>;
  return { jit: typeof result.stringify === 'function', result };
}
const documents = new Map<string, ReturnType<typeof parse>>();

describe('useGraphqlJit', () => {
  it('compiles a document the second time it runs, with the same answer', async () => {
    const plugin = useGraphqlJit();
    const first = await run([plugin], '{ hello }');
    const second = await run([plugin], '{ hello }');
    expect(first).toMatchObject({ jit: false, result: { data: { hello: 'world' } } });
    expect(second).toMatchObject({ jit: true, result: { data: { hello: 'world' } } });
  });

  it('leaves documents with several operations on the standard executor (operationName picks one)', async () => {
    const plugin = useGraphqlJit();
    const text = 'query A { hello } query B { broken }';
    for (let i = 0; i < 3; i++) {
      const a = await run([plugin], text, 'A');
      const b = await run([plugin], text, 'B');
      expect(a).toMatchObject({ jit: false, result: { data: { hello: 'world' } } });
      expect(b.jit).toBe(false);
      expect(b.result.data).toEqual({ broken: null });
    }
  });

  it("an error inside a resolver is masked as graphql-js's is: INTERNAL_SERVER_ERROR, same path and locations", async () => {
    const plugin = useGraphqlJit();
    const logged: unknown[] = [];
    const mask = createMaskError((e) => logged.push(e));
    const answers = [];
    for (let i = 0; i < 2; i++) {
      const { jit, result } = await run([plugin], '{ hello broken }');
      const [error] = result.errors as GraphQLError[];
      answers.push({ jit, json: (mask(error) as GraphQLError).toJSON() });
    }
    expect(answers.map((a) => a.jit)).toEqual([false, true]);
    expect(answers[1]!.json).toEqual(answers[0]!.json);
    expect(answers[0]!.json).toEqual({
      message: 'Unexpected error.',
      locations: [{ line: 1, column: 9 }],
      path: ['broken'],
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
    expect(logged.map((e) => (e as Error).message)).toEqual(['secret internals', 'secret internals']);
  });
});

describe('FAIRWAY_GRAPHQL_JIT', () => {
  it('defaults to on and is turned off with false', () => {
    expect(load({ NODE_ENV: 'production' }).execution.jit).toBe(true);
    expect(load({ NODE_ENV: 'test', FAIRWAY_GRAPHQL_JIT: 'false' }).execution.jit).toBe(false);
    expect(() => load({ FAIRWAY_GRAPHQL_JIT: 'maybe' })).toThrow(/FAIRWAY_GRAPHQL_JIT/);
  });
});

describe('the app with compiled execution', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ jit: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('parses and validates a query text once, with every plugin of the app installed (graphql-armor included)', () => {
    const once = () => {
      const { parse, validate, schema } = t.app.yoga.getEnveloped({
        request: new Request(`${t.url}`, { method: 'POST' }),
      });
      const document = parse(DASHBOARD);
      return { document, errors: validate(schema, document) };
    };
    const first = once();
    const second = once();
    expect(first.errors).toEqual([]);
    // yoga's parser and validation caches answer the same objects: nothing was parsed or validated again.
    expect(second.document).toBe(first.document);
    expect(second.errors).toBe(first.errors);
  });

  it('answers the tenant dashboard the same on its first run (standard executor) and after (compiled)', async () => {
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push((await t.gql(admin, DASHBOARD, { slug: 'aurora-research' })).body);
    expect(answers[0]!.errors, JSON.stringify(answers[0])).toBeUndefined();
    expect(answers[0]!.data!.tenant.queues.length).toBeGreaterThan(0);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('typed errors keep their code, message, path and locations once compiled', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const query = '{ tenant(slug: "no-such-tenant") { name } }';
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await t.gql(member, query));
    expect(codesOf(answers[0]!)).toEqual(['NOT_FOUND']);
    expect(answers[0]!.body.errors![0]).toMatchObject({
      path: ['tenant'],
      locations: [{ line: 1, column: 3 }],
    });
    expect(answers[1]!.body).toEqual(answers[0]!.body);
    expect(answers[2]!.body).toEqual(answers[0]!.body);
  });

  it("a foreign tenant's slug answers like a missing one, compiled or not", async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const foreign = await t.gql(member, '{ tenant(slug: "borealis-labs") { name } }');
    const again = await t.gql(member, '{ tenant(slug: "borealis-labs") { name } }');
    expect(codesOf(foreign)).toEqual(['NOT_FOUND']);
    expect(again.body).toEqual(foreign.body);
  });
});
