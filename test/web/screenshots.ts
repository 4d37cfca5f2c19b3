// Regenerates docs/console/*.png: the demo gateway (seeded SQLite, simulated cluster) on a free port,
// Chromium at 1280×800 signed in as the demo's member and platform admin, one screenshot per page.
// Run with `npm run console:screenshots`.
import path from 'node:path';
import { ensureBuilt } from '../../web/ensure-built.mjs';
import { launchChromium } from '../helpers/console-browser.js';
import { startTestApp } from '../helpers/harness.js';

const out = path.resolve(import.meta.dirname, '../../docs/console');
ensureBuilt();
const t = await startTestApp();
const origin = t.url.replace(/\/graphql$/, '');
const member = t.token('aurora-research', 'MEMBER');
for (const [name, gpus] of [
  ['pretrain-7b', 8],
  ['finetune-llama', 4],
  ['eval-sweep', 2],
  ['big-waiting', 64],
] as const)
  await t.gql(member, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
    in: {
      name,
      podSets: [{ gpusPerPod: Math.min(gpus, 8), count: gpus > 8 ? gpus / 8 : 1 }],
      expectedDurationSeconds: 7200,
    },
  });
const browser = await launchChromium();
const shoot = async (token: string | null, pages: [string, string, string][]) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(origin);
  if (token) {
    await page.screenshot({ path: path.join(out, 'sign-in.png') });
    await page.getByRole('textbox', { name: 'API token' }).fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
  }
  for (const [file, link, heading] of pages) {
    if (link.startsWith('/')) await page.goto(`${origin}${link}`);
    else await page.getByRole('link', { name: link, exact: true }).click();
    await page.getByRole('heading', { name: heading }).first().waitFor();
    await page.waitForTimeout(400);
    await page.screenshot({ path: path.join(out, file), fullPage: true });
  }
  await context.close();
};
// An hour of the jobs' running charged, so that the usage page has something to show.
t.now.value += 3_600_000;
await t.app.scheduler.checkpointUsage();
await shoot(member, [
  ['overview.png', 'Overview', 'Queues'],
  ['jobs.png', 'Jobs', 'Jobs'],
  ['submit.png', 'Submit', 'Submit a job'],
  ['usage.png', 'Usage', 'Usage'],
]);
const jobs = await t.gql(
  member,
  `{ tenant(slug: "aurora-research") { jobs(first: 10) { edges { node { id name } } } } }`,
);
const waiting = jobs.body.data!.tenant.jobs.edges.find(
  (e: { node: { name: string } }) => e.node.name === 'big-waiting',
);
if (waiting)
  await shoot(member, [['job.png', `/jobs/${encodeURIComponent(waiting.node.id)}`, 'big-waiting']]);
await shoot(t.token('aurora-research', 'TENANT_ADMIN'), [
  ['quota-requests.png', 'Quota requests', 'Quota requests'],
  ['audit.png', 'Audit', 'Audit'],
]);
await shoot(t.token(null, 'PLATFORM_ADMIN'), [
  ['cluster.png', 'Cluster', 'Cluster'],
  ['policies.png', 'Policies', 'Policies'],
  ['break-glass.png', 'Break-glass', 'Break-glass'],
]);
await browser.close();
await t.close();
console.log(`screenshots written to ${path.relative(process.cwd(), out)}`);
