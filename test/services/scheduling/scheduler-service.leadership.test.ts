import net from 'node:net';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { PostgresAdvisoryLeadership } from '../../../src/services/scheduling/leadership.js';
import { createTestDatabase, describeNeeding, type TestDatabase } from '../../helpers/database.js';
import { waitFor } from '../../helpers/process.js';

/**
 * The advisory-lock leadership tells its owner the moment the lock may be gone: when
 * PostgreSQL ends the lock's session, and when the connection silently stops answering
 * (packets dropped: no error ever arrives, only the heartbeat notices).
 */

const title = 'PostgreSQL advisory leadership notices a lost lock';

/** A TCP proxy to PostgreSQL that can stop passing bytes in both directions (a black hole). */
async function blackHoleProxy(target: URL) {
  const sockets = new Set<net.Socket>();
  let holed = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (d) => !holed && upstream.write(d));
    upstream.on('data', (d) => !holed && client.write(d));
    for (const s of [client, upstream]) s.on('error', () => undefined);
    // Once holed, the database's side stays open and silent, like a session whose client
    // vanished: only PostgreSQL itself can end it.
    client.on('close', () => !holed && upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    blackHole: () => (holed = true),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describeNeeding(['postgresql'], title, () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
  });

  async function database(): Promise<string> {
    const db: TestDatabase = await createTestDatabase('postgresql');
    cleanup.push(() => db.dispose());
    return (db.database as { url: string }).url;
  }

  it("terminating the lock's session calls onLost once, and another holder can then take the lock", async () => {
    const url = await database();
    const first = new PostgresAdvisoryLeadership(url, { heartbeatMs: 60_000 });
    const second = new PostgresAdvisoryLeadership(url, { heartbeatMs: 60_000 });
    cleanup.push(
      () => first.release(),
      () => second.release(),
    );
    const lost: string[] = [];
    first.onLost((reason) => lost.push(reason));
    expect(await first.tryAcquire()).toBe(true);
    expect(await second.tryAcquire()).toBe(false);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    cleanup.push(() => admin.end());
    const { rows } = await admin.query(
      `select pid from pg_locks where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())`,
    );
    expect(rows).toHaveLength(1);
    await admin.query(`select pg_terminate_backend($1)`, [rows[0].pid]);
    // The heartbeat is a minute away: the connection's own error/end says it.
    await waitFor('onLost', async () => lost.length > 0, 5_000, 20);
    expect(lost).toHaveLength(1);
    expect(await second.tryAcquire()).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(lost).toHaveLength(1);
  });

  it('a connection that stops answering is noticed by the heartbeat', async () => {
    const url = new URL(await database());
    const proxy = await blackHoleProxy(url);
    cleanup.push(() => proxy.close());
    const viaProxy = new URL(url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const leadership = new PostgresAdvisoryLeadership(viaProxy.toString(), {
      heartbeatMs: 200,
      timeoutMs: 500,
      idleSessionTimeoutMs: 1500,
    });
    cleanup.push(() => leadership.release());
    const lost: string[] = [];
    leadership.onLost((reason) => lost.push(reason));
    expect(await leadership.tryAcquire()).toBe(true);
    await new Promise((r) => setTimeout(r, 600));
    expect(lost, 'a healthy connection is not reported lost').toEqual([]);
    const holedAt = Date.now();
    proxy.blackHole();
    await waitFor('onLost after the black hole', async () => lost.length > 0, 5_000, 20);
    expect(Date.now() - holedAt).toBeLessThan(2_000);
    expect(lost[0]).toMatch(/heartbeat/);
    // Asking again does not hang: it answers (false or an error) within the timeout.
    const t0 = Date.now();
    await leadership.tryAcquire().catch(() => false);
    expect(Date.now() - t0).toBeLessThan(2_000);
    // The silent session still holds the lock on the server; PostgreSQL ends it once it has
    // been idle for idleSessionTimeoutMs, and another replica can lead.
    const other = new PostgresAdvisoryLeadership(url.toString(), { heartbeatMs: 60_000 });
    cleanup.push(() => other.release());
    await waitFor(
      'another holder takes the lock the silent session held',
      () => other.tryAcquire(),
      10_000,
      200,
    );
  });
});
