import { type PodShape, shapeKey } from './fragmentation.js';

/**
 * The pod shapes of the pending jobs, as a multiset keyed by `shapeKey`: fragmentation
 * is measured against the distinct shapes something is waiting with.
 */
export class PendingShapes {
  private readonly byKey = new Map<string, { shape: PodShape; n: number }>();
  private ver = 0;

  /** Distinct shapes pending. */
  get size(): number {
    return this.byKey.size;
  }

  /**
   * Bumped when a shape appears or disappears, not when only its count changes: the
   * replay recomputes fragmentation only when the set of distinct shapes (or the nodes) changed.
   */
  get version(): number {
    return this.ver;
  }

  /** One more pending job with this shape (`key` is `shapeKey(shape)`, passed when known). */
  add(shape: PodShape, key: string = shapeKey(shape)): void {
    const e = this.byKey.get(key);
    if (e) e.n++;
    else {
      this.byKey.set(key, { shape, n: 1 });
      this.ver++;
    }
  }

  /** One pending job with this shape fewer; a shape not pending is ignored. */
  remove(key: string): void {
    const e = this.byKey.get(key);
    if (!e) return;
    e.n--;
    if (e.n === 0) {
      this.byKey.delete(key);
      this.ver++;
    }
  }

  count(key: string): number {
    return this.byKey.get(key)?.n ?? 0;
  }

  /** The distinct shapes, in the order they (last) became pending. */
  shapes(): PodShape[] {
    return [...this.byKey.values()].map((e) => e.shape);
  }
}
