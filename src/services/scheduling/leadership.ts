import type { MikroORM } from '@mikro-orm/core';
import type { DatabaseConfig } from '../../config/index.js';

/** Who may schedule. Only one replica at a time runs admission cycles and drives the backend. */
export interface Leadership {
  /** True when this replica holds (or just took) the leadership. */
  tryAcquire(): Promise<boolean>;
  release(): Promise<void>;
  /**
   * Called once each time a held leadership is lost without `release()` (the lock's
   * connection dropped or stopped answering). Returns an unsubscribe function.
   */
  onLost(callback: (reason: string) => void): () => void;
}

/** SQLite is one process's file: that process leads, and cannot lose it to another. */
export class SoleLeadership implements Leadership {
  async tryAcquire() {
    return true;
  }
  async release() {}
  onLost() {
    return () => undefined;
  }
}

/** Arbitrary 64-bit key of Fairway's scheduler lock (pg_advisory_lock namespace). */
const ADVISORY_LOCK_KEY = 0x46_61_69_72_77_61_79n; // "Fairway"

interface PgClient {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
  on(event: 'error' | 'end', cb: (e?: Error) => void): void;
  connect(): Promise<void>;
}

export interface PostgresLeadershipOptions {
  /** How often the lock's connection is probed (a black-holed connection raises no error). */
  heartbeatMs?: number;
  /** A probe, connect or lock query that takes longer than this counts as a lost connection. */
  timeoutMs?: number;
  /**
   * PostgreSQL ends the lock's session after this long without a query (idle_session_timeout).
   * A live holder queries every heartbeat; a holder whose packets are lost (black hole,
   * vanished host) does not, and its session (with the lock) would otherwise linger until
   * TCP gives up, hours later — keeping every replica, this one included, from leading.
   */
  idleSessionTimeoutMs?: number;
}

/** Rejects when `promise` has not settled within `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * PostgreSQL session advisory lock on a connection of its own: held while the connection
 * lives, released by PostgreSQL itself when this process dies, so a replica that crashed
 * cannot keep the others from scheduling.
 *
 * The lock is only as good as the connection: when it ends, errors, or stops answering the
 * heartbeat, the lock must be presumed gone (PostgreSQL may already have granted it to
 * another replica), and `onLost` listeners hear it at once.
 */
export class PostgresAdvisoryLeadership implements Leadership {
  private client: PgClient | null = null;
  private held = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly lostListeners = new Set<(reason: string) => void>();
  private readonly heartbeatMs: number;
  private readonly timeoutMs: number;
  private readonly idleSessionTimeoutMs: number;

  constructor(
    private readonly url: string,
    options: PostgresLeadershipOptions = {},
  ) {
    this.heartbeatMs = options.heartbeatMs ?? 1000;
    this.timeoutMs = options.timeoutMs ?? 3000;
    this.idleSessionTimeoutMs = options.idleSessionTimeoutMs ?? Math.max(10_000, this.heartbeatMs * 5);
  }

  onLost(callback: (reason: string) => void): () => void {
    this.lostListeners.add(callback);
    return () => this.lostListeners.delete(callback);
  }

  async tryAcquire(): Promise<boolean> {
    if (this.held) return true;
    try {
      if (!this.client) {
        const pg = (await import('pg')).default;
        const client = new pg.Client({
          connectionString: this.url,
          connectionTimeoutMillis: this.timeoutMs,
          keepAlive: true,
        }) as unknown as PgClient;
        // Events of a connection that is no longer ours (replaced or released) are ignored.
        client.on('error', (error) =>
          this.connectionLost(client, `the lock's connection failed: ${error?.message ?? 'unknown error'}`),
        );
        client.on('end', () => this.connectionLost(client, "the lock's connection ended"));
        this.client = client;
        await within(client.connect(), this.timeoutMs, 'connecting for the scheduler lock');
        // PostgreSQL 14+; older servers keep the session until TCP keepalive ends it.
        await within(
          client.query(`set idle_session_timeout = ${Math.round(this.idleSessionTimeoutMs)}`),
          this.timeoutMs,
          'setting the lock session timeout',
        ).catch(() => undefined);
      }
      const client = this.client;
      const { rows } = await within(
        client.query('select pg_try_advisory_lock($1) as locked', [ADVISORY_LOCK_KEY.toString()]),
        this.timeoutMs,
        'the scheduler lock query',
      );
      if (this.client !== client) return false; // lost while asking
      this.held = rows[0]?.locked === true;
    } catch (error) {
      this.drop();
      throw error;
    }
    if (this.held) this.startHeartbeat();
    return this.held;
  }

  async release(): Promise<void> {
    const client = this.client;
    this.drop();
    if (client)
      await within(client.end(), this.timeoutMs, 'closing the scheduler lock').catch(() => undefined);
  }

  private startHeartbeat(): void {
    const client = this.client;
    const beat = () => {
      this.heartbeat = setTimeout(() => {
        if (this.client !== client || !this.held) return;
        within(client!.query('select 1'), this.timeoutMs, 'the scheduler lock heartbeat').then(
          () => this.client === client && this.held && beat(),
          (error: Error) => this.connectionLost(client!, error.message),
        );
      }, this.heartbeatMs);
      this.heartbeat.unref();
    };
    beat();
  }

  /** Forgets the connection (closing it without waiting: a black-holed socket never answers). */
  private drop(): void {
    const client = this.client;
    this.client = null;
    this.held = false;
    if (this.heartbeat) clearTimeout(this.heartbeat);
    this.heartbeat = null;
    if (client) void client.end().catch(() => undefined);
  }

  private connectionLost(client: PgClient, reason: string): void {
    if (this.client !== client) return;
    const wasHeld = this.held;
    this.drop();
    if (!wasHeld) return;
    for (const listener of this.lostListeners) {
      try {
        listener(reason);
      } catch {
        // A listener's failure must not keep the others from hearing it.
      }
    }
  }
}

export function leadershipFor(database: DatabaseConfig, _orm?: MikroORM): Leadership {
  return database.dialect === 'postgresql'
    ? new PostgresAdvisoryLeadership(database.url)
    : new SoleLeadership();
}
