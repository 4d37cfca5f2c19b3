import { type AuditResult, serverAudits } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/harness.js';

/**
 * The GraphQL over HTTP spec audits of graphql-http against the real server (all
 * plugins, including auth and request ids). Every MUST audit has to pass; SHOULD and
 * MAY results are printed when they fail but do not fail the suite.
 */
let t: TestApp;
const results: AuditResult[] = [];

beforeAll(async () => {
  t = await startTestApp();
  const audits = serverAudits({ url: t.url, fetchFn: fetch });
  // Sequentially: each audit is a single request, and a serial run keeps failures readable.
  for (const audit of audits) results.push(await audit.fn());
});
afterAll(async () => {
  await t?.close();
});

function describeFailures(list: AuditResult[]): string {
  return list
    .map((r) =>
      r.status === 'ok' ? `${r.id} ${r.name}: ok` : `${r.id} ${r.name}: [${r.status}] ${r.reason}`,
    )
    .join('\n');
}

describe('GraphQL over HTTP audits (graphql-http serverAudits)', () => {
  it('runs every audit the library defines', () => {
    const expected = serverAudits({ url: t.url, fetchFn: fetch });
    expect(results.length).toBe(expected.length);
    // At the time of writing graphql-http 1.23 has 61; a much smaller number means the run broke off.
    expect(results.length).toBeGreaterThan(40);
    expect(results.some((r) => r.name.startsWith('MUST'))).toBe(true);
  });

  it('passes every MUST audit', () => {
    const failingMust = results.filter((r) => r.name.startsWith('MUST') && r.status !== 'ok');
    expect(failingMust, `failing MUST audits:\n${describeFailures(failingMust)}`).toEqual([]);
  });

  it('reports SHOULD/MAY audits (informational)', () => {
    const others = results.filter((r) => !r.name.startsWith('MUST') && r.status !== 'ok');
    if (others.length) console.info(`non-MUST audits that did not pass:\n${describeFailures(others)}`);
    // An audit of a requirement level the library does not define would mean the API changed under us.
    for (const r of results) expect(r.name).toMatch(/^(MUST|SHOULD|MAY) /);
  });

  it("an operationName that names no operation (or is not a string) is the client's error: 400, not a masked 500", async () => {
    // Behind audits 6C00-6C03 (MAY use 400 on a non-string operationName): yoga raises
    // OPERATION_RESOLUTION_FAILURE (http status 400); the gateway must not mask it as
    // INTERNAL_SERVER_ERROR nor log it as an unexpected server error.
    for (const operationName of ['NoSuchOperation', { x: 1 }, 7]) {
      const response = await fetch(t.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
        body: JSON.stringify({ query: 'query Known { __typename }', operationName }),
      });
      const body = (await response.json()) as {
        errors?: { message: string; extensions?: { code?: string } }[];
      };
      const what = `operationName ${JSON.stringify(operationName)}: ${response.status} ${JSON.stringify(body)}`;
      expect(response.status, what).toBe(400);
      expect(body.errors?.length, what).toBe(1);
      expect(body.errors![0]!.extensions?.code, what).not.toBe('INTERNAL_SERVER_ERROR');
      expect(body.errors![0]!.message, what).toMatch(/operation/i);
    }
  });
});
