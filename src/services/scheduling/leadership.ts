import type { MikroORM } from '@mikro-orm/core';
import type { DatabaseConfig } from '../../config.js';

/** Who may schedule. Only one replica at a time runs admission cycles and drives the backend. */
export interface Leadership {
  /** True when this replica holds (or just took) the leadership. */
  tryAcquire(): Promise<boolean>;
  release(): Promise<void>;
}

/** SQLite is one process's file: that process leads. */
export class SoleLeadership implements Leadership {
  async tryAcquire() {
    return true;
  }
  async release() {}
}

/** Arbitrary 64-bit key of Fairway's scheduler lock (pg_advisory_lock namespace). */
const ADVISORY_LOCK_KEY = 0x46_61_69_72_77_61_79n; // "Fairway"

/**
 * PostgreSQL session advisory lock on a connection of its own: held while the connection
 * lives, released by PostgreSQL itself when this process dies, so a replica that crashed
 * cannot keep the others from scheduling.
 */
export class PostgresAdvisoryLeadership implements Leadership {
  private client: { query(sql: string, params?: unknown[]): Promise<{ rows: { locked: boolean }[] }>; end(): Promise<void>; on(event: 'error', cb: (e: Error) => void): void } | null = null;
  private held = false;

  constructor(private readonly url: string) {}

  async tryAcquire(): Promise<boolean> {
    if (this.held) return true;
    if (!this.client) {
      const pg = (await import('pg')).default;
      const client = new pg.Client({ connectionString: this.url });
      client.on('error', () => {
        // The connection broke: the lock is gone with it.
        this.held = false;
        this.client = null;
      });
      await client.connect();
      this.client = client as never;
    }
    const { rows } = await this.client!.query('select pg_try_advisory_lock($1) as locked', [ADVISORY_LOCK_KEY.toString()]);
    this.held = rows[0]?.locked === true;
    return this.held;
  }

  async release(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.held = false;
    if (client) await client.end().catch(() => undefined);
  }
}

export function leadershipFor(database: DatabaseConfig, _orm?: MikroORM): Leadership {
  return database.dialect === 'postgresql' ? new PostgresAdvisoryLeadership(database.url) : new SoleLeadership();
}
