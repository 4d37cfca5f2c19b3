import type { AuditEvent } from '../src/persistence/audit/index.js';
import type { ApiToken, Membership, Project, Tenant } from '../src/persistence/tenancy/index.js';
import type { Principal } from '../src/services/context.js';
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

import type {
  ClusterNode,
  Cohort,
  Flavor,
  NodePool,
  PriorityClassRow,
  Queue,
} from '../src/persistence/cluster/index.js';
import type { JobEvent, JobView } from '../src/persistence/jobs/index.js';
export const FlavorRef = builder.objectRef<Flavor>('Flavor');
export const NodePoolRef = builder.objectRef<NodePool>('NodePool');
export const ClusterNodeRef = builder.objectRef<ClusterNode>('ClusterNode');
export const CohortRef = builder.objectRef<Cohort>('Cohort');
export const PriorityClassRef = builder.objectRef<PriorityClassRow>('PriorityClass');
export const QueueRef = builder.objectRef<Queue>('Queue');
// A stored entity (getJob, submitJob) or a read row (listJobs): what the resolvers read of either.
export const JobRef = builder.objectRef<JobView>('Job');
export const JobEventRef = builder.objectRef<JobEvent>('JobEvent');

import type { BreakGlassGrant } from '../src/persistence/tenancy/index.js';
export const BreakGlassGrantRef = builder.objectRef<BreakGlassGrant>('BreakGlassGrant');

import type { ProjectMembership } from '../src/services/tenancy/index.js';
export const ProjectMemberRef = builder.objectRef<ProjectMembership>('ProjectMember');
