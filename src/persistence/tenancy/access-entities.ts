import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { uuidv7 } from '../ids.js';
import { tenantFilter } from '../tenant-filter.js';
import { PROJECT_ROLES, Project, Tenant, User } from './entities.js';

/** A person's role in one project. They must be a member of the project's tenant. */
export const ProjectMembership = defineEntity({
  name: 'ProjectMembership',
  tableName: 'project_memberships',
  filters: tenantFilter,
  uniques: [{ properties: ['project', 'user'] }],
  indexes: [{ properties: ['user'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    project: () => p.manyToOne(Project).deleteRule('cascade'),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    role: p.enum([...PROJECT_ROLES]),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type ProjectMembership = InferEntity<typeof ProjectMembership>;

/**
 * A platform admin's time-limited permission to look inside one tenant (job content,
 * e-mails, audit details) and act there as its admin. Opening it, every read under it and
 * closing it are audited in that tenant's own log.
 */
export const BreakGlassGrant = defineEntity({
  name: 'BreakGlassGrant',
  tableName: 'break_glass_grants',
  filters: tenantFilter,
  indexes: [{ properties: ['operator', 'expiresAt'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    operator: () => p.manyToOne(User).deleteRule('cascade'),
    reason: p.string().length(500),
    expiresAt: p.datetime(),
    closedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type BreakGlassGrant = InferEntity<typeof BreakGlassGrant>;

export const accessEntities = [ProjectMembership, BreakGlassGrant];
