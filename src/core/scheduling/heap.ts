// Indexed binary min-heap: O(log n) push/pop/remove. Items remember their slot so a
// cancel or finish can take a job out of its queue without a scan.
export interface HeapItem {
  heapIndex: number; // -1 when not in a heap
}

export class IndexedHeap<T extends HeapItem> {
  private readonly items: T[] = [];
  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    item.heapIndex = this.items.length;
    this.items.push(item);
    this.up(item.heapIndex);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  has(item: T): boolean {
    return item.heapIndex >= 0 && this.items[item.heapIndex] === item;
  }

  remove(item: T): boolean {
    if (!this.has(item)) return false;
    const i = item.heapIndex;
    const last = this.items.pop() as T;
    item.heapIndex = -1;
    if (i < this.items.length) {
      this.items[i] = last;
      last.heapIndex = i;
      this.up(i);
      this.down(last.heapIndex);
    }
    return true;
  }

  /** Unordered view; callers sort if they need order. */
  values(): readonly T[] {
    return this.items;
  }

  private up(i: number): void {
    const items = this.items;
    const item = items[i] as T;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p] as T;
      if (!this.less(item, parent)) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    items[i] = item;
    item.heapIndex = i;
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i] as T;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && this.less(items[r] as T, items[l] as T)) c = r;
      const child = items[c] as T;
      if (!this.less(child, item)) break;
      items[i] = child;
      child.heapIndex = i;
      i = c;
    }
    items[i] = item;
    item.heapIndex = i;
  }
}
