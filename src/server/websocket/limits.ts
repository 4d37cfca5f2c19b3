import type { Principal } from '../../auth/index.js';

/**
 * The caps of src/server/websocket/websocket.ts, counted in this process (one server replica): nothing is
 * shared across replicas, so with N replicas behind a balancer a tenant may hold up to N× each cap.
 */
export interface WebSocketCaps {
  maxSubscriptionsPerConnection: number;
  maxSubscriptionsPerPrincipal: number;
  maxSubscriptionsPerTenant: number;
  maxConnectionsPerPrincipal: number;
  maxConnectionsPerTenant: number;
  maxHalfOpenPerIp: number;
}

/** What one socket holds against the caps; every counter it touched is given back when it closes. */
export interface ConnectionSlot {
  readonly ip: string;
  halfOpen: boolean;
  /** Set once connection_init verified the credential and the connection caps let it in. */
  principal: Principal | null;
  principalKey: string | null;
  tenants: readonly string[];
  /** graphql-ws operation ids holding a subscription slot. */
  readonly operations: Set<string>;
}

export interface WebSocketStats {
  /** Sockets accepted and not yet closed (initialised or not). */
  sockets: number;
  halfOpen: number;
  /** Sockets past connection_init. */
  connections: number;
  subscriptions: number;
  byPrincipal: { connections: number; subscriptions: number };
  byTenant: { connections: number; subscriptions: number };
}

/** A refusal the client is told about: which cap, and its value (never anyone else's numbers). */
export type CapRefusal = { cap: 'principal' | 'tenant' | 'connection'; limit: number } | null;

function increment(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
function decrement(map: Map<string, number>, key: string): void {
  const left = (map.get(key) ?? 0) - 1;
  if (left > 0) map.set(key, left);
  else map.delete(key);
}
const sum = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);

/**
 * A connection counts against its principal (the person: every token of one user shares the
 * cap) and against each tenant the principal acts in: an API token's one tenant, or each tenant
 * a signed-in user has a role in. A platform operator outside any tenant counts only as a principal.
 */
export function tenantsOf(principal: Principal): string[] {
  if (principal.token) return principal.token.tenantId ? [principal.token.tenantId] : [];
  return [...principal.roles.keys()];
}

export class WebSocketLimits {
  private readonly halfOpenByIp = new Map<string, number>();
  private readonly connectionsByPrincipal = new Map<string, number>();
  private readonly connectionsByTenant = new Map<string, number>();
  private readonly subscriptionsByPrincipal = new Map<string, number>();
  private readonly subscriptionsByTenant = new Map<string, number>();
  private readonly slots = new Set<ConnectionSlot>();

  constructor(private readonly caps: WebSocketCaps) {}

  /** A socket was accepted: it is half-open until connection_init is answered. Null when its address holds
   * too many already.
   */
  open(ip: string): ConnectionSlot | null {
    if ((this.halfOpenByIp.get(ip) ?? 0) >= this.caps.maxHalfOpenPerIp) return null;
    const slot: ConnectionSlot = {
      ip,
      halfOpen: true,
      principal: null,
      principalKey: null,
      tenants: [],
      operations: new Set(),
    };
    increment(this.halfOpenByIp, ip);
    this.slots.add(slot);
    return slot;
  }

  /** connection_init was answered (accepted or refused): the socket is no longer half-open. */
  initialised(slot: ConnectionSlot): void {
    if (!slot.halfOpen) return;
    slot.halfOpen = false;
    decrement(this.halfOpenByIp, slot.ip);
  }

  /** Admits a verified principal on this socket, or names the connection cap it would exceed. */
  admit(slot: ConnectionSlot, principal: Principal): CapRefusal {
    const key = principal.userId;
    const tenants = tenantsOf(principal);
    if ((this.connectionsByPrincipal.get(key) ?? 0) >= this.caps.maxConnectionsPerPrincipal)
      return { cap: 'principal', limit: this.caps.maxConnectionsPerPrincipal };
    if (tenants.some((t) => (this.connectionsByTenant.get(t) ?? 0) >= this.caps.maxConnectionsPerTenant))
      return { cap: 'tenant', limit: this.caps.maxConnectionsPerTenant };
    slot.principal = principal;
    slot.principalKey = key;
    slot.tenants = tenants;
    increment(this.connectionsByPrincipal, key);
    for (const tenant of tenants) increment(this.connectionsByTenant, tenant);
    return null;
  }

  /** Takes a subscription slot for operation `id`, or names the cap it would exceed. */
  reserve(slot: ConnectionSlot, id: string): CapRefusal {
    const key = slot.principalKey;
    if (key === null || slot.operations.has(id)) return null;
    if (slot.operations.size >= this.caps.maxSubscriptionsPerConnection)
      return { cap: 'connection', limit: this.caps.maxSubscriptionsPerConnection };
    if ((this.subscriptionsByPrincipal.get(key) ?? 0) >= this.caps.maxSubscriptionsPerPrincipal)
      return { cap: 'principal', limit: this.caps.maxSubscriptionsPerPrincipal };
    if (
      slot.tenants.some(
        (t) => (this.subscriptionsByTenant.get(t) ?? 0) >= this.caps.maxSubscriptionsPerTenant,
      )
    )
      return { cap: 'tenant', limit: this.caps.maxSubscriptionsPerTenant };
    slot.operations.add(id);
    increment(this.subscriptionsByPrincipal, key);
    for (const tenant of slot.tenants) increment(this.subscriptionsByTenant, tenant);
    return null;
  }

  /** Gives back operation `id`'s slot; idempotent (graphql-ws may report one end twice). */
  release(slot: ConnectionSlot, id: string): void {
    if (!slot.operations.delete(id) || slot.principalKey === null) return;
    decrement(this.subscriptionsByPrincipal, slot.principalKey);
    for (const tenant of slot.tenants) decrement(this.subscriptionsByTenant, tenant);
  }

  /** The socket closed: everything it held is given back. Idempotent. */
  close(slot: ConnectionSlot): void {
    if (!this.slots.delete(slot)) return;
    this.initialised(slot);
    for (const id of [...slot.operations]) this.release(slot, id);
    if (slot.principalKey !== null) {
      decrement(this.connectionsByPrincipal, slot.principalKey);
      for (const tenant of slot.tenants) decrement(this.connectionsByTenant, tenant);
    }
  }

  stats(): WebSocketStats {
    let connections = 0;
    let subscriptions = 0;
    for (const slot of this.slots) {
      if (slot.principalKey !== null) connections++;
      subscriptions += slot.operations.size;
    }
    return {
      sockets: this.slots.size,
      halfOpen: sum(this.halfOpenByIp),
      connections,
      subscriptions,
      byPrincipal: {
        connections: sum(this.connectionsByPrincipal),
        subscriptions: sum(this.subscriptionsByPrincipal),
      },
      byTenant: {
        connections: sum(this.connectionsByTenant),
        subscriptions: sum(this.subscriptionsByTenant),
      },
    };
  }
}
