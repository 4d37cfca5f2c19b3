import type { EntityManager } from '@mikro-orm/core';
import { AuditEvent, Tenant, User } from '../persistence/entities.js';
import type { EventBus } from '../events/bus.js';
import type { Principal } from '../auth/principal.js';

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
  async flush(parts: { em: EntityManager; principal: Principal | null; requestId: string; now: () => Date; events: EventBus }): Promise<void> {
    if (this.pending.size === 0 || !parts.principal) return;
    const entries = [...this.pending.entries()];
    this.pending.clear();
    const principal = parts.principal;
    const written: { tenantId: string; id: string }[] = [];
    await parts.em.fork({ clear: true }).transactional(async (em) => {
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
        written.push({ tenantId, id: event.id });
      }
    });
    for (const { tenantId, id } of written) parts.events.publish('audit-event', tenantId, { auditEventId: id });
  }
}
