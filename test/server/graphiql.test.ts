import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type FairwayConfig, load } from '../../src/config/index.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { testRateLimits } from '../helpers/rate-limits.js';

/**
 * GraphiQL is served from the installed package (@graphql-yoga/render-graphiql), so it works
 * offline and where a CDN is blocked: the page the browser gets loads no script or stylesheet
 * from another origin (yoga's default page loads them from a CDN and shows "Loading __TITLE__…"
 * without it).
 */

const apps: FairwayApp[] = [];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-graphiql-'));

afterAll(async () => {
  for (const app of apps) await app.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function serve(graphiql: boolean): Promise<string> {
  const loaded = load({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    FAIRWAY_DATA_DIR: dataDir,
    DATABASE_URL: 'sqlite::memory:',
    FAIRWAY_DEMO: 'false',
    FAIRWAY_DEMO_TRICKLE: 'false',
    FAIRWAY_GRAPHIQL: String(graphiql),
    FAIRWAY_SIM_TIME_SCALE: '1000',
  });
  const config: FairwayConfig = { ...loaded, rateLimits: testRateLimits() };
  const app = await buildApp({ config });
  apps.push(app);
  return (await app.listen(0, '127.0.0.1')).url;
}

/**
 * What the browser fetches when it parses the page: src/href of the page's own tags and CSS
 * imports, outside the inline script and style bodies (the bundled editor's code holds
 * templates such as `<img src="${x}">` that are not fetches of the page).
 */
function loadedUrls(html: string): string[] {
  const shell = html
    .replace(/(<script\b[^>]*>)[\s\S]*?(<\/script>)/gi, '$1$2')
    .replace(/(<style\b[^>]*>)[\s\S]*?(<\/style>)/gi, '$1$2');
  const urls: string[] = [];
  for (const m of shell.matchAll(
    /<(?:script|link|img|iframe)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']*)["']/gi,
  ))
    urls.push(m[1]!);
  for (const m of html.matchAll(/@import\s+(?:url\()?\s*["']?(https?:[^"')\s;]+)/gi)) urls.push(m[1]!);
  return urls;
}

describe('GraphiQL', () => {
  it('is a self-contained page: no script or stylesheet from another origin, no unfilled placeholder', async () => {
    const url = await serve(true);
    const response = await fetch(url, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    const html = await response.text();
    expect(html).toContain('<title>Fairway</title>');
    expect(html).not.toContain('__TITLE__');
    // The editor itself is in the page.
    expect(html).toContain('renderYogaGraphiQL');
    const external = loadedUrls(html).filter((u) => /^(https?:)?\/\//i.test(u));
    expect(external).toEqual([]);
    expect(html).not.toMatch(/unpkg\.com|jsdelivr\.net|esm\.sh|cdnjs/);
    // Nor does the inline code name a script or stylesheet on another origin to load later.
    expect(html.match(/https?:\/\/[^"'`\s)\\]+\.(m?js|css)\b/g) ?? []).toEqual([]);
    // Every other fetch the page makes is to this server (relative) or inline (data:, blob:).
    for (const u of loadedUrls(html)) expect(u).toMatch(/^(data:|blob:|\/|\.\/|[a-z0-9_-]+(\.[a-z0-9]+)?$)/i);
  }, 30_000);

  it('still answers GraphQL on the same URL', async () => {
    const url = await serve(true);
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(await response.json()).toEqual({ data: { __typename: 'Query' } });
  }, 30_000);

  it('is not served when disabled (FAIRWAY_GRAPHIQL=false, production by default)', async () => {
    const url = await serve(false);
    const response = await fetch(url, { headers: { accept: 'text/html' } });
    const body = await response.text();
    expect(body).not.toContain('renderYogaGraphiQL');
    expect(body).not.toContain('<html');
  }, 30_000);
});
