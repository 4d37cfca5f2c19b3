// Part 1b: what authentication costs per request. `{ __typename }` (no resolver, no database)
// closed loop at concurrency 1 and 32 on one Fairway server, with the aurora MEMBER's API token
// vs no Authorization header (anonymous: the baseline, measured in the same run, alternating),
// and bare graphql-yoga answering the same query as the framework's floor.
import { closedLoop, post, sharedAgent } from './load-client.js';
import { f1, ms, out, reportServerErrors, table, verdict } from './report.js';
import { startBaseline, startFairway } from './servers.js';

const TARGET = 1.5;

export async function authOverhead(seconds: number): Promise<void> {
  out('## 1b. Authenticated vs anonymous `{ __typename }`');
  out();
  out(`Target: server CPU per authenticated request ≤ ${TARGET}× the anonymous one (same server, same run).`);
  out();
  const server = await startFairway(60);
  const bare = await startBaseline({ slug: 'none', queueName: 'none', usage: [], jobs: [] });
  try {
    const token = server.tokens['aurora-research/MEMBER']!;
    const body = JSON.stringify({ query: '{ __typename }' });
    // Both must answer data, not an error (an anonymous caller refused would be cheaper and wrong).
    for (const [what, t] of [
      ['anonymous', null],
      ['authenticated', token],
    ] as const) {
      const res = await post(sharedAgent, new URL(server.url), t, body);
      if (res.status !== 200 || !res.text.includes('"__typename"'))
        throw new Error(`{ __typename } ${what}: ${res.status} ${res.text.slice(0, 300)}`);
    }
    // And the credential is checked on this query (a wrong one refused), so "authenticated" measures
    // authentication.
    const bad = await post(sharedAgent, new URL(server.url), `${token.slice(0, -4)}xxxx`, body);
    const checked = bad.status === 401 || bad.text.includes('UNAUTHENTICATED');
    // A fresh server's first seconds run cold code (JIT, caches): warm both paths before anything counts.
    for (const t of [null, token, null, token]) await closedLoop(server.url, t, body, 8, 1000, 0);
    const rows: string[][] = [];
    const verdicts: string[] = [];
    for (const c of [1, 32]) {
      // Anonymous first, then authenticated, then anonymous again: the baseline brackets the
      // measured case, so a change of machine load during the pair shows as two different anons.
      const anon1 = await closedLoop(server.url, null, body, c, 1000, seconds * 1000, server.pid);
      const auth = await closedLoop(server.url, token, body, c, 1000, seconds * 1000, server.pid);
      const anon2 = await closedLoop(server.url, null, body, c, 1000, seconds * 1000, server.pid);
      const bareRun =
        c === 32 ? await closedLoop(bare.url, null, body, c, 1000, seconds * 1000, bare.pid) : null;
      const anonCpu =
        (anon1.cpuMsPerRequest * anon1.ok + anon2.cpuMsPerRequest * anon2.ok) /
        Math.max(1, anon1.ok + anon2.ok);
      const ratio = auth.cpuMsPerRequest / anonCpu;
      const row = (what: string, r: typeof auth, extra: string) => [
        String(c),
        what,
        f1(r.ok / r.seconds),
        ms(r.p50),
        ms(r.p99),
        ms(r.cpuMsPerRequest),
        r.share,
        extra,
        String(r.errors),
      ];
      rows.push(row('anonymous (1st)', anon1, ''));
      rows.push(row('authenticated', auth, `${ratio.toFixed(2)}×`));
      rows.push(row('anonymous (2nd)', anon2, ''));
      if (bareRun) rows.push(row('bare yoga', bareRun, ''));
      verdicts.push(
        `concurrency ${c}: authenticated ${ms(auth.cpuMsPerRequest)} ms vs anonymous ${ms(anonCpu)} ms CPU per request = ${ratio.toFixed(2)}× (target ≤ ${TARGET}×: ${verdict(ratio, '<=', TARGET)})`,
      );
      console.log(
        `  c=${c}: anon ${f1(anon1.ok / anon1.seconds)}/${f1(anon2.ok / anon2.seconds)} req/s, auth ${f1(auth.ok / auth.seconds)} req/s, CPU ratio ${ratio.toFixed(2)}`,
      );
    }
    out(
      `One Fairway server (SQLite, demo seeded, no jobs), \`{ "query": "{ __typename }" }\` over keep-alive HTTP/1.1, closed loop, after 4 s of unmeasured warm-up of both paths; 1 s warm-up + ${seconds} s per run; ` +
        'authenticated = `Authorization: Bearer <aurora MEMBER API token>`, anonymous = no header. Runs in the order anonymous, authenticated, anonymous; ' +
        'the ratio is authenticated CPU per request / the mean of the two anonymous runs (weighted by requests). Bare yoga (own process, no auth) answers the same query as the floor. ' +
        'CPU ms/req = server process CPU time (all threads) in the measured window / requests answered in it.',
    );
    out();
    out(
      table(
        [
          'concurrency',
          'caller',
          'req/s',
          'p50 ms',
          'p99 ms',
          'server CPU ms/req',
          'on-CPU / waiting',
          'CPU auth/anon',
          'errors',
        ],
        rows,
      ),
    );
    out();
    for (const v of verdicts) out(`- ${v}.`);
    out(
      checked
        ? `- A wrong token on the same query is refused (${bad.status}): the token is verified on every authenticated request measured here.`
        : `- **A wrong token on the same query was answered (${bad.status}: ${bad.text.slice(0, 120)})**: the server does not check the credential for \`{ __typename }\`, so the authenticated row does not measure authentication.`,
    );
    out();
  } finally {
    reportServerErrors(server);
    await Promise.all([server.stop(), bare.stop()]);
  }
}
