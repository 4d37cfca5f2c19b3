import { type EntityManager, LockMode } from '@mikro-orm/core';
import { allBound, tableOf } from '../../persistence/bound-sql.js';
import { LeaderEpoch } from '../../persistence/scheduling/index.js';

/** A scheduling write made by a replica whose leadership another replica has since taken. */
export class StaleLeaderError extends Error {
  constructor(
    readonly mine: number,
    readonly stored: number,
  ) {
    super(
      `scheduler write refused: this replica leads epoch ${mine}, the database is at epoch ${stored} (another replica took over)`,
    );
    this.name = 'StaleLeaderError';
  }
}

const ROW_ID = 1;

/**
 * The fencing token of the scheduler's leadership (table fairway_leader_epoch, one row).
 *
 * A replica that takes the leadership bumps the epoch in a transaction of its own and
 * remembers the result; each transaction that writes scheduling decisions first reads the
 * row FOR UPDATE (PostgreSQL) and refuses when the epoch is no longer its own. The row lock
 * orders the two: a takeover waits for an old leader's write in flight (and then reads what
 * it wrote), and an old leader's write after the takeover sees the new epoch and rolls back.
 * SQLite serialises writers anyway and has one process: the same check costs one read.
 */
export class LeaderEpochs {
  constructor(private readonly dialect: 'sqlite' | 'postgresql') {}

  /** Bumps the epoch for a new leader and returns it. */
  async takeOver(em: EntityManager): Promise<number> {
    return em.transactional(async (tx) => {
      const row = await this.lockedRow(tx);
      if (!row) {
        // Databases migrated before the row existed (the migration inserts it).
        tx.create(LeaderEpoch, { id: ROW_ID, epoch: 1 });
        await tx.flush();
        return 1;
      }
      const next = Number(row.epoch) + 1;
      await tx.nativeUpdate(LeaderEpoch, { id: ROW_ID }, { epoch: next });
      return next;
    });
  }

  /**
   * Call first inside a writing transaction: throws StaleLeaderError (which rolls the
   * transaction back) unless `mine` is still the stored epoch, and holds the row until commit.
   */
  async assertCurrent(tx: EntityManager, mine: number): Promise<void> {
    // Bound SQL, not a find: every leader transaction runs it, and the ORM's find cost more than the rest of
    // a small transaction.
    const t = tableOf(tx, 'LeaderEpoch');
    const [row] = await allBound<{ epoch: number | string }>(
      tx,
      `select ${t.column('epoch')} as epoch from ${t.table} where ${t.column('id')} = ?${this.dialect === 'postgresql' ? ' for update' : ''}`,
      [ROW_ID],
    );
    const stored = row ? Number(row.epoch) : 0;
    if (stored !== mine) throw new StaleLeaderError(mine, stored);
  }

  /** The stored epoch, read outside any write (for tests and diagnostics). */
  async current(em: EntityManager): Promise<number> {
    const row = await em.fork().findOne(LeaderEpoch, { id: ROW_ID }, { disableIdentityMap: true });
    return row ? Number(row.epoch) : 0;
  }

  private lockedRow(tx: EntityManager) {
    return tx.findOne(
      LeaderEpoch,
      { id: ROW_ID },
      { lockMode: this.dialect === 'postgresql' ? LockMode.PESSIMISTIC_WRITE : undefined, refresh: true },
    );
  }
}
