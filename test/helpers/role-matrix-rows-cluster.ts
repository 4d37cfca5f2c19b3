import { PriorityClassRow } from '../../src/persistence/cluster/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { type MatrixRow, m, PLATFORM_ONLY } from './role-matrix.js';

/**
 * The pool's updates and deletes (schema/cluster/cluster-updates.ts, priority-class.ts, with its create):
 * platform configuration, platform admins only. Each call gets an object of its own, made
 * before the call (outside the row counts), so an allowed delete never takes what a later
 * row needs.
 */
const create = async (mutation: string, input: string, vars: Record<string, unknown>): Promise<string> =>
  (await m.as('platformAdmin', `mutation($in: ${input}!) { ${mutation}(input: $in) { id } }`, { in: vars }))[
    mutation
  ].id;
const newFlavor = () =>
  create('createFlavor', 'CreateFlavorInput', { name: `mf-${m.next()}`, kind: 'GPU', pricePerUnitHour: 1 });
const newPool = () => create('createNodePool', 'CreateNodePoolInput', { name: `mp-${m.next()}`, nodes: [] });
const newCohort = () => create('createCohort', 'CreateCohortInput', { name: `mc-${m.next()}` });

export const CLUSTER_UPDATE_ROWS: MatrixRow[] = [
  {
    name: 'updateFlavor',
    query: `mutation($in: UpdateFlavorInput!) { updateFlavor(input: $in) { id } }`,
    variables: async () => ({ in: { id: await newFlavor(), gpuModel: 'Matrix GPU' } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'deleteFlavor',
    query: `mutation($id: ID!) { deleteFlavor(id: $id) }`,
    variables: async () => ({ id: await newFlavor() }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'updateNodePool',
    query: `mutation($in: UpdateNodePoolInput!) { updateNodePool(input: $in) { id } }`,
    variables: async () => ({ in: { id: await newPool(), nodes: [] } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'deleteNodePool',
    query: `mutation($id: ID!) { deleteNodePool(id: $id) }`,
    variables: async () => ({ id: await newPool() }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'updateCohort',
    query: `mutation($in: UpdateCohortInput!) { updateCohort(input: $in) { id } }`,
    variables: async () => ({ in: { id: await newCohort(), quotas: [] } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'deleteCohort',
    query: `mutation($id: ID!) { deleteCohort(id: $id) }`,
    variables: async () => ({ id: await newCohort() }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'createPriorityClass',
    query: `mutation($in: CreatePriorityClassInput!) { createPriorityClass(input: $in) { name } }`,
    variables: async () => ({ in: { name: `matrix-new-class-${m.next()}`, value: 1, preemptible: 'YES' } }),
    expect: PLATFORM_ONLY,
  },
  // The row's own class is written straight to the database (outside the row counts).
  {
    name: 'deletePriorityClass',
    query: `mutation($n: String!) { deletePriorityClass(name: $n) }`,
    variables: async () => {
      const em = systemEntityManager(m.t.app.orm);
      const row = em.create(PriorityClassRow, {
        name: `matrix-class-${m.next()}`,
        value: 1,
        preemptible: 'yes',
        description: null,
        requiresGrant: false,
      });
      await em.flush();
      return { n: row.name };
    },
    expect: PLATFORM_ONLY,
  },
];
