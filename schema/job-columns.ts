import { type FieldNode, type GraphQLResolveInfo, Kind, type SelectionSetNode } from 'graphql';
import type { JobColumn } from '../src/persistence/jobs/index.js';

/**
 * The columns a Job field reads besides the ones every job row has (job-rows.ts JOB_KEY_COLUMNS:
 * id, tenant, project, queue, submitter, name, state). Only these fields let a page read fewer
 * columns; a selection with any other Job field, or a fragment that cannot be followed, reads
 * every column. test/schema/job-columns.test.ts asks each of them both ways and compares.
 */
export const JOB_FIELD_COLUMNS: Readonly<Record<string, readonly JobColumn[]>> = {
  __typename: [],
  id: [],
  name: [],
  state: [],
  queue: [],
  project: [],
  submittedByName: [],
  // The scheduler's view, by id and state.
  position: [],
  pendingReason: [],
  eta: [],
  gpuUtilization: [],
  priorityClass: ['priority_class'],
  gpus: ['gpus_requested'],
  preemptionCount: ['preemption_count'],
  maxRetries: ['max_retries'],
  disruptionCount: ['disruption_count'],
  workloadKind: ['workload_kind'],
  exitReason: ['exit_reason'],
  submittedAt: ['submitted_at'],
  admittedAt: ['admitted_at'],
  startedAt: ['started_at'],
  finishedAt: ['finished_at'],
};

/**
 * The columns a connection of jobs (`edges { node { … } }`, `pageInfo`) needs for what this
 * resolver's selection asks, or undefined (every column) when it asks for a field not in
 * JOB_FIELD_COLUMNS.
 */
export function jobColumnsOf(info: GraphQLResolveInfo): JobColumn[] | undefined {
  const columns = new Set<JobColumn>();
  const walk = (set: SelectionSetNode | undefined, level: 'connection' | 'edge' | 'job'): boolean => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (!walk(selection.selectionSet, level)) return false;
        continue;
      }
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = info.fragments[selection.name.value];
        if (!fragment || !walk(fragment.selectionSet, level)) return false;
        continue;
      }
      if (!visitField(selection, level)) return false;
    }
    return true;
  };
  const visitField = (field: FieldNode, level: 'connection' | 'edge' | 'job'): boolean => {
    const name = field.name.value;
    if (level === 'connection') {
      if (name === 'edges') return walk(field.selectionSet, 'edge');
      return name === 'pageInfo' || name === '__typename';
    }
    if (level === 'edge') {
      if (name === 'node') return walk(field.selectionSet, 'job');
      return name === 'cursor' || name === '__typename';
    }
    const needs = JOB_FIELD_COLUMNS[name];
    if (!needs) return false;
    for (const column of needs) columns.add(column);
    return true;
  };
  for (const node of info.fieldNodes) if (!walk(node.selectionSet, 'connection')) return undefined;
  return [...columns];
}
