import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { uuidv7 } from '../ids.js';
import { Tenant, User } from '../tenancy/index.js';
import { tenantFilter } from '../tenant-filter.js';

export const AUDIT_OUTCOMES = ['SUCCESS', 'DENIED', 'FAILED'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

export const AuditEvent = defineEntity({
  name: 'AuditEvent',
  tableName: 'audit_events',
  filters: tenantFilter,
  indexes: [{ properties: ['tenant', 'id'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    /** Null for platform-level events no tenant may see (e.g. a refused cross-tenant probe). */
    tenant: () => p.manyToOne(Tenant).nullable().deleteRule('set null'),
    actor: () => p.manyToOne(User).nullable().deleteRule('set null'),
    actorTokenId: p.string().length(36).nullable(),
    action: p.string().length(64),
    targetType: p.string().length(64).nullable(),
    targetId: p.string().length(36).nullable(),
    input: p.json<Record<string, unknown>>(),
    outcome: p.enum([...AUDIT_OUTCOMES]),
    errorCode: p.string().length(32).nullable(),
    requestId: p.string().length(64),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type AuditEvent = InferEntity<typeof AuditEvent>;

export const auditEntities = [AuditEvent];
