import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { Plugin } from 'graphql-yoga';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../src/auth/principal.js';
import { tenantFilterFor } from '../src/auth/principal.js';
import type { EventBus } from '../src/events/bus.js';
import type { SchedulerService } from '../src/services/scheduling/scheduler-service.js';
import { createLoaders, type Loaders } from '../src/services/loaders.js';
import { BreakGlassReads } from '../src/services/tenancy/break-glass-reads.js';
import { scopedEntityManager } from '../src/persistence/tenant-filter.js';

export interface ServiceContextOptions {
  orm: MikroORM;
  events: EventBus;
  scheduler: SchedulerService;
  now: () => number;
  /** The price book's currency (config FAIRWAY_CURRENCY). */
  currency?: string;
}

/**
 * Gives each operation its own EntityManager with the tenant filter set to exactly the
 * tenants the caller belongs to (all of them for platform admins). Must come after the
 * auth plugin, which puts the caller in `currentUser`.
 */
export function useServiceContext(options: ServiceContextOptions): Plugin {
  return {
    onContextBuilding({ context, extendContext }) {
      const principal = ((context as { currentUser?: Principal | null }).currentUser ?? null) as Principal | null;
      const em = scopedEntityManager(options.orm, tenantFilterFor(principal));
      extendContext({
        principal,
        em,
        events: options.events,
        scheduler: options.scheduler,
        loaders: lazyLoaders(em),
        breakGlassReads: new BreakGlassReads(),
        now: () => new Date(options.now()),
        requestId: (context as { requestId?: string }).requestId ?? randomUUID(),
        currency: options.currency,
      } as never);
    },
  };
}

/**
 * The operation's loaders, made on first use. A subscription's own context lives as long as
 * the subscription and never uses them (each event gets loaders of its own): six DataLoaders
 * made eagerly were ~7 KiB of heap per subscriber.
 */
function lazyLoaders(em: EntityManager): Loaders {
  let made: Loaders | undefined;
  const all = () => (made ??= createLoaders(em));
  return {
    get project() {
      return all().project;
    },
    get queue() {
      return all().queue;
    },
    get tenant() {
      return all().tenant;
    },
    get user() {
      return all().user;
    },
    get membership() {
      return all().membership;
    },
    get jobEvents() {
      return all().jobEvents;
    },
  };
}
