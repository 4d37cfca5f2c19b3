// The server's /metrics figures part 4 (burst-stall.ts) polls: admissions per queue, and the
// admission cycles' (or slices') count and durations.
import http from 'node:http';
import { METRICS_TOKEN, type Started } from './servers.js';

export function scrape(server: Started): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(
        server.url.replace(/\/graphql$/, '/metrics'),
        { agent: false, headers: { authorization: `Bearer ${METRICS_TOKEN}` } },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (d: string) => (text += d));
          res.on('end', () =>
            res.statusCode === 200 ? resolve(text) : reject(new Error(`/metrics: ${res.statusCode}`)),
          );
        },
      )
      .on('error', reject);
  });
}

const metric = (text: string, re: RegExp): number => Number(re.exec(text)?.[1] ?? 0);
export const admittedIn = (text: string, queue: string) =>
  metric(text, new RegExp(`^fairway_scheduler_admitted_total\\{queue="${queue}"\\} (\\S+)$`, 'm'));
/** Cycles (or slices) run so far, and how many took longer than `le` seconds (the histogram's buckets). */
export function cycles(text: string): { count: number; over100ms: number; over250ms: number; sum: number } {
  const count = metric(text, /^fairway_scheduler_cycle_duration_seconds_count (\S+)$/m);
  const le = (b: string) =>
    metric(text, new RegExp(`^fairway_scheduler_cycle_duration_seconds_bucket\\{le="${b}"\\} (\\S+)$`, 'm'));
  return {
    count,
    over100ms: count - le('0.1'),
    over250ms: count - le('0.25'),
    sum: metric(text, /^fairway_scheduler_cycle_duration_seconds_sum (\S+)$/m),
  };
}
