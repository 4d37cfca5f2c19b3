import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { type CredentialsChanged, type EventBus, onCredentialsChangedHere } from '../events/index.js';
import type { Principal } from './principal.js';

/** Distinct credentials kept; the least recently used go first. */
const MAX_ENTRIES = 10_000;

/** What a lookup found, and how long it may be believed regardless of the TTL. */
export interface CachedLookup {
  principal: Principal;
  /** App clock (the resolver's `now`): the API token's expiresAt. */
  expiresAt?: number;
  /** Wall clock (Date.now, what the JWT verifier checks against): the JWT's exp. */
  wallExpiresAt?: number;
}

interface Entry {
  promise: Promise<Principal>;
  /** Null while the lookup runs (concurrent misses join it). */
  principal: Principal | null;
  /** Monotonic clock: the TTL, counted from the start of the lookup (when the rows were read). */
  freshUntil: number;
  expiresAt: number;
  wallExpiresAt: number;
}

/** The cache key of a bearer credential: its SHA-256, never the credential itself. */
export function credentialKey(kind: 'api-token' | 'jwt', hash: string): string {
  return `${kind}:${hash}`;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * Principals by credential hash for a few seconds, so an authenticated request does not
 * cost three or four queries. Entries are dropped as soon as a credentials-changed event
 * names their user or token; a principal never outlives its token's expiry, its JWT's exp,
 * or the earliest break-glass grant it holds. Failed lookups are not kept.
 *
 * The TTL (config DEFAULT_IDENTITY_CACHE_MS says why it exists) is a backstop, not the
 * revocation mechanism.
 *
 * Cached principals are shared between requests: they are frozen, and their maps are typed
 * read-only (nothing writes them; see Principal).
 */
export class IdentityCache {
  private readonly entries = new LRUCache<string, Entry>({ max: MAX_ENTRIES });
  readonly ttlMs: number;
  private readonly now: () => number;

  constructor(options: { ttlMs: number; now?: () => number }) {
    this.ttlMs = options.ttlMs;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The principal for `key`: from the cache, from a lookup already running, or from `lookup`. */
  resolve(key: string, lookup: () => Promise<CachedLookup>): Promise<Principal> {
    if (this.ttlMs <= 0) return lookup().then((found) => found.principal);
    const entry = this.entries.get(key);
    if (entry && (entry.principal === null || this.usable(entry))) return entry.promise;
    const fresh: Entry = {
      promise: null as never,
      principal: null,
      freshUntil: performance.now() + this.ttlMs,
      expiresAt: Infinity,
      wallExpiresAt: Infinity,
    };
    fresh.promise = lookup().then(
      (found) => {
        const principal = freeze(found.principal);
        fresh.principal = principal;
        fresh.expiresAt = Math.min(found.expiresAt ?? Infinity, earliestGrantExpiry(principal));
        fresh.wallExpiresAt = found.wallExpiresAt ?? Infinity;
        return principal;
      },
      (error: unknown) => {
        // A credential that does not verify is looked up again next time (it may be created meanwhile).
        if (this.entries.peek(key) === fresh) this.entries.delete(key);
        throw error;
      },
    );
    this.entries.set(key, fresh);
    return fresh.promise;
  }

  private usable(entry: Entry): boolean {
    return (
      performance.now() < entry.freshUntil && this.now() < entry.expiresAt && Date.now() < entry.wallExpiresAt
    );
  }

  /**
   * Drops what the change makes stale: the principals of its user (all their tokens and
   * sessions) and of its token; everything when it names neither. Lookups still running are
   * dropped too: they may have read the rows before the change committed.
   */
  invalidate(change: Pick<CredentialsChanged, 'userId' | 'tokenId'>): void {
    if (change.userId === undefined && change.tokenId === undefined) {
      this.entries.clear();
      return;
    }
    const stale: string[] = [];
    this.entries.forEach((entry, key) => {
      const p = entry.principal;
      if (
        !p ||
        p.userId === change.userId ||
        (change.tokenId !== undefined && p.token?.id === change.tokenId)
      )
        stale.push(key);
    });
    for (const key of stale) this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /**
   * Listens for credentials-changed: synchronously for changes made in this process, and
   * through the bus (Redis across replicas) for the others. Returns the stop function.
   */
  follow(bus: EventBus, logError: (error: unknown) => void): () => void {
    const offHere = onCredentialsChangedHere(bus, (change) => this.invalidate(change));
    const changes = bus.subscribe('credentials-changed');
    void (async () => {
      for await (const change of changes) this.invalidate(change ?? {});
    })().catch(logError);
    return () => {
      offHere();
      void changes.return?.(undefined);
    };
  }
}

function earliestGrantExpiry(principal: Principal): number {
  let earliest = Infinity;
  for (const grant of principal.breakGlass.values()) earliest = Math.min(earliest, grant.expiresAt);
  return earliest;
}

/** Shared between requests: a stray assignment throws instead of leaking into the next caller's request. */
function freeze(principal: Principal): Principal {
  if (principal.token) Object.freeze(principal.token);
  return Object.freeze(principal);
}
