import type { ApiToken, AuditEvent, Membership, Project, Tenant } from '../src/persistence/entities.js';
import type { Principal } from '../src/auth/principal.js';
import { builder } from './builder.js';

/**
 * Object refs live apart from their field definitions so type files can point at each
 * other (Tenant.projects ↔ Project.tenant) without circular-import ordering problems.
 */
export const TenantRef = builder.objectRef<Tenant>('Tenant');
export const MemberRef = builder.objectRef<Membership>('Member');
export const ProjectRef = builder.objectRef<Project>('Project');
export const ApiTokenRef = builder.objectRef<ApiToken>('ApiToken');
export const AuditEventRef = builder.objectRef<AuditEvent>('AuditEvent');
export const ViewerRef = builder.objectRef<Principal>('Viewer');
