import fs from 'node:fs';
import net from 'node:net';
import pg from 'pg';

/**
 * vitest global setup. Under CI=true every service the suites use must be configured and
 * answering, and the browser the console's tests drive installed, before a single test runs: a
 * missing PostgreSQL, Redis or chromium fails the run at once, with the reason, instead of
 * surfacing later as skipped or timed-out suites.
 * Outside CI it does nothing (suites that need a missing service show as skipped).
 */
export default async function checkServices(): Promise<void> {
  if (!process.env.CI) return;
  const database = process.env.TEST_DATABASE_URL;
  const redis = process.env.TEST_REDIS_URL;
  const problems: string[] = [];
  if (!database) problems.push('TEST_DATABASE_URL is not set');
  if (!redis) problems.push('TEST_REDIS_URL is not set');
  if (database) {
    const client = new pg.Client({ connectionString: database, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
      await client.query('select 1');
    } catch (error) {
      problems.push(`PostgreSQL at TEST_DATABASE_URL does not answer: ${(error as Error).message}`);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  if (redis) {
    const answer = await redisPing(new URL(redis)).catch((error: Error) => error.message);
    if (answer !== '+PONG') problems.push(`Redis at TEST_REDIS_URL does not answer PING: ${answer}`);
  }
  const chromium = process.env.FAIRWAY_CHROMIUM ?? '/usr/bin/chromium';
  if (!fs.existsSync(chromium))
    problems.push(`no chromium at ${chromium} (the console's browser tests need it)`);
  if (problems.length)
    throw new Error(`CI=true and the test services are not ready:\n- ${problems.join('\n- ')}`);
}

/** One PING over a raw socket: enough to know Redis answers, without a client library. */
function redisPing(url: URL): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: url.hostname || '127.0.0.1', port: Number(url.port || 6379) });
    const timer = setTimeout(() => socket.destroy(new Error('no answer within 5 s')), 5000);
    let data = '';
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      if (data.includes('\r\n')) {
        clearTimeout(timer);
        socket.end();
        resolve(data.split('\r\n')[0]!);
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
