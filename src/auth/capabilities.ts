import type { TenantRole } from '../persistence/tenancy/index.js';

/**
 * What a caller may do inside one tenant. Roles grant capabilities; an API token can
 * only narrow them (its scopes are intersected with its creator's role).
 * The same strings are the API token scopes.
 */
export const CAPABILITIES = [
  'tenant:read',
  'members:read',
  'members:write',
  'projects:write',
  'tokens:read',
  'audit:read',
  'jobs:read',
  'jobs:write',
  'usage:read',
] as const;
export type Capability = (typeof CAPABILITIES)[number];

/**
 * What every role may read. usage:read (a queue's live usage, share and counts) is here on
 * purpose: members decide by it, viewers run dashboards, auditors review cost. It is still
 * its own capability so a token can be given tenant:read without it (services/cluster.ts
 * queueUsage checks it on every path).
 */
const READ_ONLY: Capability[] = ['tenant:read', 'jobs:read', 'usage:read'];

/**
 * projects:write is on MEMBER so that a member who is a project's admin can use it (and a
 * token can carry it); what it allows is decided per project (src/auth/project-access.ts):
 * creating and archiving projects and granting them resources stay with tenant admins.
 */
export const ROLE_CAPABILITIES: Record<TenantRole, ReadonlySet<Capability>> = {
  TENANT_ADMIN: new Set(CAPABILITIES),
  MEMBER: new Set<Capability>([...READ_ONLY, 'jobs:write', 'projects:write']),
  VIEWER: new Set<Capability>(READ_ONLY),
  AUDITOR: new Set<Capability>([...READ_ONLY, 'audit:read']),
};

/**
 * What a platform admin holds in every tenant without looking inside it: that the tenant
 * exists, its queues and usage, its jobs' metadata (name, state, resources, position) and
 * its tokens (to revoke a leaked one). Not members:read (e-mails), not audit:read (audit
 * details), no writes: those take a break-glass grant.
 */
export const PLATFORM_CAPABILITIES: ReadonlySet<Capability> = new Set<Capability>([
  'tenant:read',
  'jobs:read',
  'usage:read',
  'tokens:read',
]);

/** The one scope of a platform token (no tenant): platform-admin automation. */
export const PLATFORM_SCOPE = 'platform:admin';

/** Roles that may change anything at all; VIEWER and AUDITOR are read-only. */
export const MUTATING_ROLES: ReadonlySet<TenantRole> = new Set(['TENANT_ADMIN', 'MEMBER']);
