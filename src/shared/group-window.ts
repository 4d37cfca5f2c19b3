// When a group commit writes: after a short window, so that the writers arriving meanwhile share its
// transaction (submits, audited together; the leader's backend reports).

/**
 * Runs `write` once the group-commit window (FAIRWAY_GROUP_COMMIT_MS) has passed; with 0, on the next
 * turn of the event loop (what arrives in this turn still joins).
 */
export function afterGroupWindow(ms: number, write: () => void): void {
  if (ms > 0) setTimeout(write, ms);
  else setImmediate(write);
}
