import type { EntityManager } from '@mikro-orm/core';
import type { Project } from '../persistence/entities.js';
import type { Queue } from '../persistence/scheduling-entities.js';
import type { ServiceContext } from './context.js';
import type { SubmitJobInput } from './jobs.js';

export interface SubmitTarget {
  queue: Queue;
  project: Project;
  input: SubmitJobInput;
}

/**
 * What a project may use, checked at submit and preview before anything is written:
 * granted priority classes and dedicated pools (FORBIDDEN without the grant) and the
 * tenant's and project's data boundaries (BAD_USER_INPUT).
 */
export async function enforceSubmitPolicy(_ctx: ServiceContext, _em: EntityManager, _target: SubmitTarget): Promise<void> {
  // Filled in by the grants and data-boundaries work (issue 10).
}
