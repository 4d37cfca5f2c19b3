import { type EntityManager, IsolationLevel, type MikroORM, type TransactionOptions } from '@mikro-orm/core';
import { PostgreSqlPlatform } from '@mikro-orm/postgresql';
import type { SubscriptionEventStore } from '../../../plugins/useSubscriptionEventContext.js';
import { type Principal, tenantFilterFor } from '../../auth/index.js';
import type { EventBus } from '../../events/index.js';
import { scopedEntityManager } from '../../persistence/tenant-filter.js';
import type { ServiceContext } from '../../services/context.js';
import { createLoaders, type Loaders } from '../../services/loaders.js';
import type { JobLogsService } from '../../services/logs/index.js';
import type { SchedulerService } from '../../services/scheduling/index.js';
import { BreakGlassGrantEnded, BreakGlassReads } from '../../services/tenancy/index.js';

export interface ServiceContextDeps {
  orm: MikroORM;
  events: EventBus;
  scheduler: SchedulerService;
  /** Job logs and cluster events. */
  logs?: JobLogsService;
  now: () => number;
  /** The price book's currency (config FAIRWAY_CURRENCY). */
  currency?: string;
  /** Config FAIRWAY_GROUP_COMMIT_MS. */
  groupCommitMs?: number;
}

/**
 * The service context of one request: its own EntityManager with the tenant filter set to
 * exactly the tenants the caller belongs to (all of them for platform admins), its loaders, the
 * caller and the request id.
 */
export function serviceContexts(deps: ServiceContextDeps) {
  return {
    /**
     * A GraphQL operation's (plugins/useServiceContext.ts): break-glass reads are noted, for
     * plugins/useBreakGlassAudit.ts to audit; loaders are made on first use.
     */
    forOperation(principal: Principal | null, request: { requestId: string }): ServiceContext {
      const em = scopedEntityManager(deps.orm, tenantFilterFor(principal));
      return {
        principal,
        em,
        events: deps.events,
        scheduler: deps.scheduler,
        logs: deps.logs,
        loaders: lazyLoaders(em),
        breakGlassReads: new BreakGlassReads(),
        now: () => new Date(deps.now()),
        requestId: request.requestId,
        currency: deps.currency,
        groupCommitMs: deps.groupCommitMs,
      };
    },
    /** A plain HTTP route's (the usage export): no break-glass reads noted, as for in-process callers. */
    forRoute(principal: Principal, request: { requestId: string }): ServiceContext {
      const em = scopedEntityManager(deps.orm, tenantFilterFor(principal));
      return {
        em,
        principal,
        requestId: request.requestId,
        now: () => new Date(deps.now()),
        events: deps.events,
        scheduler: deps.scheduler,
        logs: deps.logs,
        loaders: createLoaders(em),
        currency: deps.currency,
        groupCommitMs: deps.groupCommitMs,
      };
    },
  };
}

/** Whether a break-glass audit write failed because its grant ended (plugins/useBreakGlassAudit.ts answers
 * FORBIDDEN then).
 */
export function isBreakGlassGrantEnded(error: unknown): error is Error {
  return error instanceof BreakGlassGrantEnded;
}

/** What each subscription event reads through (plugins/useSubscriptionEventContext.ts). */
export function subscriptionEventStore(orm: MikroORM): SubscriptionEventStore<EntityManager> {
  // knex warns about (and ignores) isolation levels and READ ONLY on SQLite.
  const snapshot: TransactionOptions =
    orm.em.getPlatform() instanceof PostgreSqlPlatform
      ? { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true }
      : {};
  return {
    scoped: (principal) => scopedEntityManager(orm, tenantFilterFor(principal)),
    loaders: (em) => createLoaders(em),
    // The transaction's fork keeps the tenant filter of `em`.
    snapshot: (em, run) => em.transactional(run, snapshot),
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
