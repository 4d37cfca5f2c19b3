import type { EntityManager } from '@mikro-orm/core';
import { PriorityClassRow, type Queue } from '../../persistence/cluster/index.js';
import { findPlain } from '../../persistence/plain-rows.js';
import type { DataBoundaries, Project, Tenant } from '../../persistence/tenancy/index.js';
import { badInput, forbidden } from '../../shared/index.js';
import {
  firstViolation,
  grantedPoolsOf,
  grantedPriorityClassesOf,
  KIND_LABEL,
  type Violation,
} from '../tenancy/index.js';
import type { SubmitJobInput } from './submit-input.js';

export interface SubmitTarget {
  queue: Queue;
  project: Project;
  /** The queue's (and the project's) tenant. */
  tenant: Tenant;
  /** The job's priority class, when already read (null: no such class); absent: read here. */
  priorityClassRow?: PriorityClassRow | null;
  input: SubmitJobInput;
}

/** What a job runs, as submitted (stored in Job.workload.container). */
export interface JobContainer {
  image: string;
  command: string[];
  args: string[];
  /** `secret`: its value is masked in logs and never shown (absent: false). */
  env: { name: string; value: string; secret?: boolean }[];
  datasets: { location: string; mountPath: string; readOnly: boolean }[];
  artifactStore: string | null;
  /** Only what Fairway keeps of the requested security context (absent when neither was given; older rows
   * have none).
   */
  securityContext?: KeptSecurityContext;
}

/** The user and group a container may choose; everything else about its security Fairway decides. */
export interface KeptSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
}

/** A container's security context as a client asks for it (ContainerSecurityInput). */
export interface RequestedSecurityContext {
  runAsUser?: number | null;
  runAsGroup?: number | null;
  privileged?: boolean | null;
  allowPrivilegeEscalation?: boolean | null;
  addCapabilities?: string[] | null;
  runAsNonRoot?: boolean | null;
}

export const ENFORCED_SECURITY =
  'Fairway runs every container as non-root, without privilege escalation, with all capabilities dropped and the RuntimeDefault seccomp profile';
const MAX_ID = 2_147_483_647;

/**
 * The security context a submit asks for, checked before anything is written: whatever
 * would weaken what Fairway forces on every pod is refused (BAD_USER_INPUT naming the
 * field) rather than silently overridden, so the caller learns the job would not run as
 * asked. Returns what is kept: the user and group, or undefined when neither was given.
 */
export function keptSecurityContext(
  requested: RequestedSecurityContext | null | undefined,
): KeptSecurityContext | undefined {
  if (!requested) return undefined;
  const refuse = (field: string, why: string) =>
    badInput(`${why}: ${ENFORCED_SECURITY}.`, { field: `container.securityContext.${field}` });
  if (requested.privileged === true) throw refuse('privileged', 'A privileged container is not allowed');
  if (requested.allowPrivilegeEscalation === true)
    throw refuse('allowPrivilegeEscalation', 'Privilege escalation is not allowed');
  if (requested.addCapabilities?.length)
    throw refuse(
      'addCapabilities',
      `Capabilities cannot be added (asked for: ${requested.addCapabilities.slice(0, 8).join(', ')})`,
    );
  if (requested.runAsNonRoot === false) throw refuse('runAsNonRoot', 'runAsNonRoot cannot be false');
  for (const field of ['runAsUser', 'runAsGroup'] as const) {
    const id = requested[field];
    if (id != null && (!Number.isInteger(id) || id < 0 || id > MAX_ID))
      throw refuse(field, `${field} must be an integer from 0 to ${MAX_ID} (got ${id})`);
  }
  if (requested.runAsUser === 0) throw refuse('runAsUser', 'runAsUser 0 is root');
  const kept: KeptSecurityContext = {
    ...(requested.runAsUser != null ? { runAsUser: requested.runAsUser } : {}),
    ...(requested.runAsGroup != null ? { runAsGroup: requested.runAsGroup } : {}),
  };
  return Object.keys(kept).length ? kept : undefined;
}

export function containerOf(workload: Record<string, unknown> | null | undefined): JobContainer | null {
  return (workload?.container as JobContainer | undefined) ?? null;
}

/**
 * What a project may use, checked at submit and preview before anything is written:
 * granted priority classes and dedicated pools (FORBIDDEN without the grant), the
 * container's security context and the tenant's and project's data boundaries
 * (BAD_USER_INPUT; locations on the node itself are refused by parseLocation whatever
 * the boundaries say).
 */
export async function enforceSubmitPolicy(em: EntityManager, target: SubmitTarget): Promise<void> {
  const { queue, project, tenant, input } = target;
  const priorityClass =
    target.priorityClassRow !== undefined
      ? target.priorityClassRow
      : ((await findPlain(em, PriorityClassRow, { name: input.priorityClass }))[0] ?? null);
  requireGrants(tenant, project, queue, input.priorityClass, priorityClass);
  const container = containerOf(input.workload);
  if (container) {
    // The graph checked the full request already (toSubmitInput); this holds for every other caller of
    // submitJob.
    keptSecurityContext(container.securityContext);
    requireWithinBoundaries(tenant, project, container);
  }
}

function requireGrants(
  tenant: Tenant,
  project: Project,
  queue: Queue,
  priorityClass: string,
  row: PriorityClassRow | null,
): void {
  if (row?.requiresGrant) {
    if (!grantedPriorityClassesOf(tenant).includes(priorityClass)) {
      throw forbidden(
        `Priority class "${priorityClass}" needs a grant, and tenant "${tenant.slug}" has not been granted it: ask a platform admin to grant it to the tenant, then a tenant admin to grant it to project "${project.slug}".`,
      );
    }
    if (!grantedPriorityClassesOf(project).includes(priorityClass)) {
      throw forbidden(
        `Priority class "${priorityClass}" needs a grant, and project "${project.slug}" has not been granted it: ask a tenant admin of "${tenant.slug}" to grant it to the project.`,
      );
    }
  }
  if (queue.dedicatedPool && !grantedPoolsOf(project).includes(queue.dedicatedPool)) {
    throw forbidden(
      `Queue "${queue.name}" runs on the dedicated pool "${queue.dedicatedPool}", which project "${project.slug}" has not been granted: ask a tenant admin of "${tenant.slug}" to grant it to the project.`,
    );
  }
}

/** The tenant's boundaries (set by the platform) and the project's (set by its admins) must both admit every
 * reference.
 */
function requireWithinBoundaries(tenant: Tenant, project: Project, container: JobContainer): void {
  const refs = {
    image: container.image,
    datasetLocations: container.datasets.map((d) => d.location),
    artifactStore: container.artifactStore,
  };
  const levels: [string, DataBoundaries | null][] = [
    [`tenant "${tenant.slug}"`, tenant.dataBoundaries ?? null],
    [`project "${project.slug}"`, project.dataBoundaries ?? null],
  ];
  for (const [whose, boundaries] of levels) {
    const violation = firstViolation(refs, boundaries);
    if (violation)
      throw badInput(describe(violation, whose), {
        field: fieldOf(violation),
        reference: violation.reference,
        allowed: violation.allowed,
      });
  }
}

const WHAT: Record<Violation['kind'], string> = {
  imageRegistries: 'Image',
  datasetLocations: 'Dataset location',
  artifactStores: 'Artifact store',
};

function describe(violation: Violation, whose: string): string {
  if (violation.allowed === null) return `${WHAT[violation.kind]}: ${violation.problem}.`;
  const allowed = violation.allowed.length ? violation.allowed.join(', ') : 'none';
  return `${WHAT[violation.kind]} "${violation.reference}" is not within the ${KIND_LABEL[violation.kind]} ${whose} allows (allowed: ${allowed}).`;
}

function fieldOf(violation: Violation): string {
  return violation.kind === 'imageRegistries'
    ? 'container.image'
    : violation.kind === 'datasetLocations'
      ? 'container.datasets'
      : 'container.artifactStore';
}

/**
 * The submit's audit input: everything the caller chose, except environment values,
 * which may carry secrets (the names stay, so the log still says what was set).
 */
export function submitAuditInput(input: SubmitJobInput): Record<string, unknown> {
  const container = containerOf(input.workload);
  if (!container) return { ...input, podSets: input.podSets };
  const env = container.env.map((e) => ({ name: e.name, value: '[redacted]' }));
  return {
    ...input,
    podSets: input.podSets,
    workload: { ...input.workload, container: { ...container, env } },
  };
}
