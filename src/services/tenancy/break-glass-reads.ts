import type { EntityManager } from '@mikro-orm/core';
import type { Principal } from '../../auth/index.js';
import type { EventBus } from '../../events/index.js';
import { AuditEvent } from '../../persistence/audit/index.js';
import { BreakGlassGrant, Tenant, User } from '../../persistence/tenancy/index.js';

/** Thrown by flush when a grant the reads were made under ended before the answer left. */
export class BreakGlassGrantEnded extends Error {
  constructor() {
    super('The break-glass grant this answer was read under has ended (closed or expired).');
    this.name = 'BreakGlassGrantEnded';
  }
}

/**
 * What a platform admin read inside tenants under break-glass grants during one operation
 * (a query, a mutation's answer, one subscription event). The reads are noted as the
 * fields resolve and written as one audit event per tenant before the answer leaves
 * (plugins/useBreakGlassAudit.ts): the tenant's auditors see who looked, at what, why
 * (the grant) and when. If the write fails, the answer is withheld.
 */
export class BreakGlassReads {
  private readonly pending = new Map<string, { grantId: string; reads: Set<string> }>();

  note(tenantId: string, grantId: string, what: string): void {
    let entry = this.pending.get(tenantId);
    if (!entry) this.pending.set(tenantId, (entry = { grantId, reads: new Set() }));
    entry.reads.add(what);
  }

  get size(): number {
    return this.pending.size;
  }

  /** Writes and forgets the noted reads; one audit event per tenant. */
  async flush(parts: {
    em: EntityManager;
    principal: Principal | null;
    requestId: string;
    now: () => Date;
    events: EventBus;
  }): Promise<void> {
    if (this.pending.size === 0 || !parts.principal) return;
    const entries = [...this.pending.entries()];
    this.pending.clear();
    const principal = parts.principal;
    // Ids are given at flush (onCreate), so they are read only after the transaction.
    const written: { tenantId: string; event: AuditEvent }[] = [];
    await parts.em.fork({ clear: true }).transactional(async (em) => {
      // The principal may be older than the grant's end (a subscription's re-authentication is
      // cached for a few seconds; a slow query may straddle the expiry): content read under a
      // grant leaves only while that grant is still open.
      const grantIds = [...new Set(entries.map(([, entry]) => entry.grantId))];
      const open = await em.count(
        BreakGlassGrant,
        {
          id: { $in: grantIds },
          operator: principal.userId,
          closedAt: null,
          expiresAt: { $gt: parts.now() },
        },
        { filters: false },
      );
      if (open !== grantIds.length) throw new BreakGlassGrantEnded();
      for (const [tenantId, { grantId, reads }] of entries) {
        const event = em.create(AuditEvent, {
          tenant: em.getReference(Tenant, tenantId),
          actor: em.getReference(User, principal.userId),
          actorTokenId: principal.token?.id ?? null,
          action: 'breakglass.read',
          targetType: 'BreakGlassGrant',
          targetId: grantId,
          input: { reads: [...reads].sort() },
          outcome: 'SUCCESS',
          errorCode: null,
          requestId: parts.requestId,
          createdAt: parts.now(),
        });
        written.push({ tenantId, event });
      }
    });
    for (const { tenantId, event } of written)
      parts.events.publish('audit-event', tenantId, { auditEventId: event.id });
  }
}
