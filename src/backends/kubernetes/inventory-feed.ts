// The Kubernetes backend's node inventory as the scheduler sees it: the cluster's Nodes read into
// BackendNodes (inventory.ts) a moment after they change, handed to the listeners only when the
// inventory is different from the last one.
import type { V1Node } from '@kubernetes/client-node';
import type { BackendNode } from '../port.js';
import { inventoryOf } from './inventory.js';
import type { KubernetesSettings } from './settings.js';

export class InventoryFeed {
  /** Node name → its pool, from the last inventory read. */
  pools = new Map<string, string>();
  private readonly listeners = new Set<(nodes: BackendNode[]) => void>();
  private last = '';
  private readonly ignoredSaid = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly nodes: () => readonly V1Node[],
    private readonly settings: KubernetesSettings,
    private readonly log: (message: string) => void,
  ) {}

  /** The listener gets the current inventory (if one was read) and every different one after it. */
  subscribe(listener: (nodes: BackendNode[]) => void): () => void {
    this.listeners.add(listener);
    if (this.last) setImmediate(() => listener(JSON.parse(this.last) as BackendNode[]));
    return () => void this.listeners.delete(listener);
  }

  /** Reads the inventory again in delayMs; the changes of that while are read once. */
  changed(delayMs = 100): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      const { nodes, ignored } = inventoryOf([...this.nodes()], this.settings);
      for (const { name, why } of ignored) {
        // Said once per node and reason: an operator's mapping mistake, not news every 100 ms.
        if (!this.ignoredSaid.has(`${name}\u0000${why}`)) this.log(`node ${name} is not used: ${why}`);
        this.ignoredSaid.add(`${name}\u0000${why}`);
      }
      this.pools = new Map(nodes.map((n) => [n.name, n.pool]));
      const inventory: BackendNode[] = nodes.map(({ gpuProduct: _product, ...node }) => node);
      const serialized = JSON.stringify(inventory);
      if (serialized === this.last) return;
      this.last = serialized;
      for (const listener of [...this.listeners]) listener(inventory);
    }, delayMs);
    this.timer.unref();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.listeners.clear();
  }
}
