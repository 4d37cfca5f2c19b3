// Benchmark of the web console in Chromium (not a test: nothing here asserts a time).
// Run: npm run bench:console
//
// The gateway as `npm start` runs it (bench/kube/gateway.ts: NODE_ENV=production, SQLite in a temp dir,
// the demo seeded, the console built), BENCH_CONSOLE_JOBS jobs (default 10,000) submitted in batches
// of 500 by aurora's member (each larger than the cohort, so all stay PENDING: rows with position and
// ETA, the table's heaviest case). Chromium (/usr/bin/chromium, headless) on this machine:
//   (1) first contentful paint of `/` (the sign-in page), a new browser context each time (cold
//       cache: no HTTP cache, no service worker), BENCH_CONSOLE_LOADS times (default 7); the same for
//       the overview signed in (the credential put in session storage before the load), with the time
//       until its content is on screen (sign-in form; overview's queue bars) checked each frame; baseline:
//       the same measure on a one-paragraph page from the same gateway's origin (GraphiQL's route is
//       heavier, so the floor is a tiny HTML response the test routes in Chromium).
//   (2) the initial JavaScript: the entry script and its static imports (modulepreload) as served,
//       gzipped at level 9 (what a gzip proxy would send; the gateway itself sends identity).
//   (3) the jobs table: every row loaded (scrolled to the end until all pages are fetched), then
//       scrolled top to bottom and back at BENCH_CONSOLE_SCROLL_PX px a frame (default 400, about 11
//       rows a frame); the frame intervals (requestAnimationFrame deltas) and long tasks (> 50 ms)
//       while scrolling; baseline: the frame intervals of the same page at rest for as long.
//   Gateway CPU (from /proc) per page load is shown beside the wall times.
// BENCH_RESULTS=bench/RESULTS.md (the section between `<!-- bench:console -->` markers is replaced,
// or appended; empty string: do not write).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Page } from 'playwright-core';
import { ensureBuilt } from '../web/ensure-built.mjs';
import { cpuSeconds, gitDescribe, loadAvg } from './api/process-stats.js';
import { ROOT } from './api/repo-root.js';
import { startGateway } from './kube/gateway.js';
import { writeResultsSection } from './results-section.js';

const JOBS = Number(process.env.BENCH_CONSOLE_JOBS ?? 10_000);
const LOADS = Number(process.env.BENCH_CONSOLE_LOADS ?? 7);
const SCROLL_PX = Number(process.env.BENCH_CONSOLE_SCROLL_PX ?? 400);
const CHROMIUM = process.env.FAIRWAY_CHROMIUM ?? '/usr/bin/chromium';
const RESULTS = process.env.BENCH_RESULTS ?? path.join(ROOT, 'bench/RESULTS.md');

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? Number.NaN;
};
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 1 : 0) : '–');
/** Frame intervals of two or more missed vsyncs (> 34 ms at 60 Hz), and of 50 ms or more. */
const over = (xs: number[]) => `${xs.filter((x) => x > 34).length} / ${xs.filter((x) => x >= 49.5).length}`;
const dist = (xs: number[]) =>
  `${ms(quantile(xs, 0.5))} / ${ms(quantile(xs, 0.95))} / ${ms(quantile(xs, 0.99))} / ${ms(Math.max(...xs))}`;

ensureBuilt();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-bench-console-'));
const gateway = await startGateway(dataDir, {});
const origin = gateway.url.replace(/\/graphql$/, '');
const member = gateway.tokens['aurora-research/MEMBER']!;
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});

try {
  // (0) the jobs.
  const started = Date.now();
  for (let done = 0; done < JOBS; done += 500) {
    const jobs = Array.from({ length: Math.min(500, JOBS - done) }, (_, i) => ({
      name: `bench-${String(done + i).padStart(5, '0')}`,
      podSets: [{ count: 64, gpusPerPod: 8 }],
      expectedDurationSeconds: 3600,
    }));
    const res = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${member}` },
      body: JSON.stringify({
        query: 'mutation($jobs: [SubmitJobInput!]!) { submitJobs(jobs: $jobs) { id } }',
        variables: { jobs },
      }),
    });
    const body = (await res.json()) as { errors?: { message: string }[] };
    if (body.errors) throw new Error(`submitJobs: ${body.errors[0]!.message}`);
  }
  const seededS = (Date.now() - started) / 1000;

  // (1) first contentful paint, cold.
  const fcp = async (page: Page) =>
    page.evaluate(
      () =>
        new Promise<number>((resolve) => {
          const entry = performance.getEntriesByName('first-contentful-paint')[0];
          if (entry) return resolve(entry.startTime);
          new PerformanceObserver((list) => {
            const e = list.getEntriesByName('first-contentful-paint')[0];
            if (e) resolve(e.startTime);
          }).observe({ type: 'paint', buffered: true });
        }),
    );
  const coldLoad = async (kind: 'sign-in' | 'overview' | 'baseline') => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    if (kind === 'overview')
      await page.addInitScript((token) => sessionStorage.setItem('fairway.credential', token), member);
    if (kind === 'baseline')
      await page.route(`${origin}/bench-baseline`, (route) =>
        route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>b</title><p>Fairway</p>' }),
      );
    const cpu0 = cpuSeconds(gateway.pid);
    await page.goto(kind === 'baseline' ? `${origin}/bench-baseline` : `${origin}/`);
    // When what the person came for is on screen (checked each frame), from navigation start. A function,
    // not a string: the console's CSP refuses string evaluation in the page.
    const shown = (await (
      await page.waitForFunction(
        (what) => {
          const ready =
            what === 'overview'
              ? Array.from(document.querySelectorAll('h2')).some((h) => h.textContent === 'Queues') &&
                document.querySelector('.bar-row') !== null
              : what === 'sign-in'
                ? document.querySelector('button[type=submit]') !== null
                : document.querySelector('p') !== null;
          return ready ? performance.now() : false;
        },
        kind,
        { polling: 'raf' },
      )
    ).jsonValue()) as number;
    const paint = await fcp(page);
    const cpuMs = (cpuSeconds(gateway.pid) - cpu0) * 1000;
    await context.close();
    return { paint, shown, cpuMs };
  };
  type Loads = { paint: number[]; shown: number[]; cpuMs: number[] };
  const loads: Record<'sign-in' | 'overview' | 'baseline', Loads> = {
    'sign-in': { paint: [], shown: [], cpuMs: [] },
    overview: { paint: [], shown: [], cpuMs: [] },
    baseline: { paint: [], shown: [], cpuMs: [] },
  };
  for (let i = 0; i < LOADS; i++)
    for (const kind of ['baseline', 'sign-in', 'overview'] as const) {
      const r = await coldLoad(kind);
      loads[kind].paint.push(r.paint);
      loads[kind].shown.push(r.shown);
      loads[kind].cpuMs.push(r.cpuMs);
    }

  // (2) initial JavaScript, as served.
  const html = await (await fetch(`${origin}/`)).text();
  const scripts = [
    ...html.matchAll(/<(?:script[^>]*src|link[^>]*rel="modulepreload"[^>]*href)="([^"]+)"/g),
  ].map((m) => m[1]!);
  let rawBytes = 0;
  let gzBytes = 0;
  for (const src of new Set(scripts)) {
    const bytes = Buffer.from(await (await fetch(new URL(src, origin))).arrayBuffer());
    rawBytes += bytes.length;
    gzBytes += gzipSync(bytes, { level: 9 }).length;
  }

  // (3) the jobs table.
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.addInitScript((token) => sessionStorage.setItem('fairway.credential', token), member);
  await page.goto(`${origin}/jobs`);
  const table = page.getByRole('table', { name: 'Jobs' });
  await table.waitFor();
  const loadStarted = Date.now();
  const scroller = '[data-testid="jobs-scroll"]';
  await page.waitForSelector(scroller);
  for (;;) {
    const loaded = await page.evaluate((sel) => {
      const el = document.querySelector(sel) as HTMLElement;
      el.scrollTop = el.scrollHeight;
      return Number(el.dataset.rows ?? 0);
    }, scroller);
    if (loaded >= JOBS) break;
    if (Date.now() - loadStarted > 300_000) throw new Error(`only ${loaded} rows loaded after 300 s`);
    await page.waitForTimeout(100);
  }
  const allLoadedS = (Date.now() - loadStarted) / 1000;
  // A string, not a function: tsx's keepNames would wrap the inner functions in a helper the page lacks.
  const scroll = (await page.evaluate(`new Promise((resolve) => {
    const el = document.querySelector(${JSON.stringify(scroller)});
    const px = ${SCROLL_PX};
    el.scrollTop = 0;
    const longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) longTasks.push(e.duration);
    }).observe({ type: 'longtask' });
    const frames = [];
    let last = 0;
    let down = true;
    const rest = [];
    const idle = (t) => {
      rest.push(t - last);
      last = t;
      if (rest.length <= frames.length) requestAnimationFrame(idle);
      else resolve({ frames: frames.slice(1), longTasks, rest: rest.slice(1) });
    };
    const step = (now) => {
      frames.push(now - last);
      last = now;
      if (down) {
        el.scrollTop += px;
        if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) down = false;
      } else {
        el.scrollTop -= px;
        if (el.scrollTop <= 0) return requestAnimationFrame((t) => { last = t; requestAnimationFrame(idle); });
      }
      requestAnimationFrame(step);
    };
    requestAnimationFrame((t) => { last = t; requestAnimationFrame(step); });
  })`)) as { frames: number[]; longTasks: number[]; rest: number[] };
  const renderedRows = await page.locator(`${scroller} tbody tr`).count();
  await context.close();

  const commit = gitDescribe();
  const lines = [
    '<!-- bench:console -->',
    '## Web console in Chromium (`npm run bench:console`)',
    '',
    `Commit ${commit}, ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs, load ${loadAvg()}; ` +
      `Chromium ${browser.version()} headless; ${JOBS.toLocaleString('en')} pending jobs seeded in ${seededS.toFixed(0)} s.`,
    '',
    `| cold load (new context, no cache; ${LOADS} loads each), ms | FCP p50 / p95 / p99 / max | content shown p50 / max | gateway CPU per load, ms (p50) |`,
    '| --- | ---: | ---: | ---: |',
    ...(
      [
        ['baseline: one-paragraph page, same origin', loads.baseline],
        ['console `/` (sign-in form)', loads['sign-in']],
        ['console `/` signed in (overview until its queue bars show)', loads.overview],
      ] as const
    ).map(
      ([what, l]) =>
        `| ${what} | ${dist(l.paint)} | ${ms(quantile(l.shown, 0.5))} / ${ms(Math.max(...l.shown))} | ${ms(quantile(l.cpuMs, 0.5))} |`,
    ),
    '',
    `Initial JavaScript (entry + modulepreload, ${new Set(scripts).size} files): ${(rawBytes / 1024).toFixed(1)} KiB, ` +
      `**${(gzBytes / 1024).toFixed(1)} KiB gzipped** (level 9).`,
    '',
    `| jobs table, ${JOBS.toLocaleString('en')} rows loaded (in ${allLoadedS.toFixed(0)} s), ${renderedRows} rendered | frames | p50 / p95 / p99 / max frame interval, ms | intervals > 34 ms / ≥ 50 ms | long tasks > 50 ms |`,
    '| --- | ---: | ---: | ---: | ---: |',
    `| scrolling top → bottom → top at ${SCROLL_PX} px a frame | ${scroll.frames.length} | ${dist(scroll.frames)} | ${over(scroll.frames)} | ${scroll.longTasks.length} |`,
    `| baseline: the same page at rest | ${scroll.rest.length} | ${dist(scroll.rest)} | ${over(scroll.rest)} | – |`,
    '<!-- /bench:console -->',
  ];
  const block = lines.join('\n');
  console.log(block);
  if (RESULTS) writeResultsSection(RESULTS, '<!-- bench:console -->', '<!-- /bench:console -->', block);
} finally {
  await browser.close();
  await gateway.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
