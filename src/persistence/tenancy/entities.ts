import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { uuidv7 } from '../ids.js';
import { tenantFilter } from '../tenant-filter.js';

export const TENANT_TIERS = ['STANDARD', 'PREMIUM', 'ENTERPRISE'] as const;
export type TenantTier = (typeof TENANT_TIERS)[number];
export const ISOLATION_LEVELS = ['DEDICATED', 'GUARANTEED', 'ELASTIC', 'BEST_EFFORT'] as const;
export type IsolationLevel = (typeof ISOLATION_LEVELS)[number];
export const TENANT_STATUSES = ['ACTIVE', 'SUSPENDED', 'ARCHIVED'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];
export const TENANT_ROLES = ['TENANT_ADMIN', 'MEMBER', 'VIEWER', 'AUDITOR'] as const;
export type TenantRole = (typeof TENANT_ROLES)[number];
export const PROJECT_STATUSES = ['ACTIVE', 'ARCHIVED'] as const;
export type ProjectStatus = (typeof PROJECT_STATUSES)[number];
/** Rights inside one project; a tenant admin is admin of every project of the tenant. */
export const PROJECT_ROLES = ['PROJECT_ADMIN', 'CONTRIBUTOR', 'VIEWER'] as const;
export type ProjectRole = (typeof PROJECT_ROLES)[number];
/**
 * Who in a project reads a job's content (container, command, environment, data paths):
 * PROJECT — every member of the project; SUBMITTER — the submitter and the project's admins.
 */
export const JOB_VISIBILITIES = ['PROJECT', 'SUBMITTER'] as const;
export type JobVisibility = (typeof JOB_VISIBILITIES)[number];

/**
 * Where a tenant's (or a project's) jobs may take images from, read data from and write
 * models to, checked at submit whatever the backend. A list that is null is not restricted;
 * an empty list allows nothing. Entries are prefixes cut at a path boundary
 * (`registry.example.com/team`, `s3://bucket/datasets`).
 */
export interface DataBoundaries {
  imageRegistries: string[] | null;
  datasetLocations: string[] | null;
  artifactStores: string[] | null;
}

const timestamps = {
  createdAt: p.datetime().onCreate(() => new Date()),
  updatedAt: p
    .datetime()
    .onCreate(() => new Date())
    .onUpdate(() => new Date()),
};

export const Tenant = defineEntity({
  name: 'Tenant',
  tableName: 'tenants',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    slug: p.string().length(63).unique(),
    name: p.string().length(200),
    tier: p.enum([...TENANT_TIERS]).default('STANDARD'),
    isolationLevel: p.enum([...ISOLATION_LEVELS]).default('ELASTIC'),
    status: p.enum([...TENANT_STATUSES]).default('ACTIVE'),
    /**
     * When true, every member of the tenant may read the content of every project's jobs
     * (as before projects had members); when false, only the project's own people.
     */
    projectsOpen: p.boolean().default(false),
    /** The project a submit goes to when it names none. */
    defaultProjectId: p.uuid().nullable(),
    /** Priority classes that need a grant, given to this tenant by platform admins. */
    grantedPriorityClasses: p.json<string[]>().nullable(),
    /** The platform's data boundaries for this tenant (set by platform admins). */
    dataBoundaries: p.json<DataBoundaries>().nullable(),
    /**
     * Where the tenant's pods may open connections (CIDRs), set by platform admins; null is
     * unrestricted. Enforced by the Kubernetes backend's NetworkPolicy (DNS stays allowed).
     */
    egressAllowlist: p.json<string[]>().nullable(),
    ...timestamps,
  },
});
export type Tenant = InferEntity<typeof Tenant>;

export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    email: p.string().length(254).unique(),
    name: p.string().length(200),
    /** Subject from the identity provider, set on first OIDC sign-in. */
    externalId: p.string().length(255).nullable().unique(),
    isPlatformAdmin: p.boolean().default(false),
    ...timestamps,
  },
});
export type User = InferEntity<typeof User>;

export const Membership = defineEntity({
  name: 'Membership',
  tableName: 'memberships',
  filters: tenantFilter,
  uniques: [{ properties: ['tenant', 'user'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    role: p.enum([...TENANT_ROLES]),
    /**
     * The name the tenant admin typed when adding the person, shown as their name in this
     * tenant until they accept (then their own profile name). So adding an address answers
     * the same whether or not the person already exists elsewhere.
     */
    invitedName: p.string().length(200).nullable(),
    ...timestamps,
  },
});
export type Membership = InferEntity<typeof Membership>;

export const Project = defineEntity({
  name: 'Project',
  tableName: 'projects',
  filters: tenantFilter,
  uniques: [{ properties: ['tenant', 'slug'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    slug: p.string().length(63),
    name: p.string().length(200),
    description: p.text().nullable(),
    status: p.enum([...PROJECT_STATUSES]).default('ACTIVE'),
    archivedAt: p.datetime().nullable(),
    /** Queue the project's jobs go to when a submit names none (set by its admins). */
    defaultQueueId: p.uuid().nullable(),
    jobVisibility: p.enum([...JOB_VISIBILITIES]).default('PROJECT'),
    /** Grant-only priority classes this project may use (within the tenant's; set by tenant admins). */
    grantedPriorityClasses: p.json<string[]>().nullable(),
    /** Dedicated node pools (the tenant's) this project's jobs may use (set by tenant admins). */
    grantedPools: p.json<string[]>().nullable(),
    /** Narrows the tenant's data boundaries for this project (set by its admins). */
    dataBoundaries: p.json<DataBoundaries>().nullable(),
    ...timestamps,
  },
});
export type Project = InferEntity<typeof Project>;

export const ApiToken = defineEntity({
  name: 'ApiToken',
  tableName: 'api_tokens',
  filters: tenantFilter,
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    /** Null for a platform token (platform admins' automation), else the one tenant it acts in. */
    tenant: () => p.manyToOne(Tenant).nullable().deleteRule('cascade'),
    createdBy: () => p.manyToOne(User).deleteRule('cascade'),
    name: p.string().length(100),
    scopes: p.json<string[]>(),
    /** SHA-256 of the whole secret; the secret itself is never stored. */
    tokenHash: p.string().length(64).unique(),
    /** First characters of the secret, so a person can tell tokens apart. */
    prefix: p.string().length(16),
    expiresAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
    ...timestamps,
  },
});
export type ApiToken = InferEntity<typeof ApiToken>;

export const tenancyEntities = [Tenant, User, Membership, Project, ApiToken];
