// Changing and deleting flavors, node pools and cohorts (platform admins; the creates are in
// cluster.ts). Each field's description says what happens to work already running; a delete of
// something in use is CONFLICT naming what uses it.
import { encodeGlobalID } from '@pothos/plugin-relay';
import { z } from 'zod';
import {
  deleteCohort,
  deleteFlavor,
  deleteNodePool,
  updateCohort,
  updateFlavor,
  updateNodePool,
} from '../../src/services/cluster/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { CohortRef, FlavorRef, NodePoolRef } from '../refs.js';
import { FlavorKindEnum, NodeInput } from './cluster.js';
import { QuotaInput, toQuotaSpec } from './quota.js';

const UpdateFlavorInput = builder.inputType('UpdateFlavorInput', {
  description: 'Fields left out stay as they are. The name never changes: quotas, nodes and prices name it.',
  fields: (t) => ({
    id: t.id({ required: true }),
    gpuModel: t.string({
      description: 'A label (null clears it); running work is not affected.',
      validate: z.string().max(100),
    }),
    kind: t.field({
      type: FlavorKindEnum,
      description:
        'Only while nothing uses the flavor (no node, quota, live job or service): quotas and admissions count in its units, so a flavor in use is CONFLICT naming its users.',
    }),
    slicesPerGpu: t.int({
      description: 'As kind: only while nothing uses the flavor.',
      validate: z.number().int().min(1, 'must be at least 1').max(1000, 'must be at most 1000'),
    }),
    pricePerUnitHour: t.float({
      description:
        'A new price-book version (as setFlavorPrice): charged from priceEffectiveFrom on, running jobs included; what was charged before never changes.',
      validate: z.number().min(0, 'must not be negative').max(1e6),
    }),
    priceEffectiveFrom: t.field({
      type: 'DateTime',
      description: 'When pricePerUnitHour takes effect. Default: now; never in the past.',
    }),
  }),
});

const UpdateNodePoolInput = builder.inputType('UpdateNodePoolInput', {
  description:
    'Fields left out stay as they are; the name never changes (queues name their dedicated pool by it). On Kubernetes the nodes come from the cluster: the inventory sync writes them again.',
  fields: (t) => ({
    id: t.id({ required: true }),
    dedicatedTenantId: t.id({
      description:
        "Only this tenant's jobs are placed here from now on (null: any tenant's). Jobs already running keep their nodes.",
    }),
    nodes: t.field({
      type: [NodeInput],
      description:
        "The pool's whole node list: new names are added, missing ones removed, the others changed. CPU and memory change at once; a node leaves, or changes its flavor or GPUs, only while no job runs on it (CONFLICT naming the nodes otherwise).",
      validate: z.array(z.any()).max(5000, 'at most 5000 nodes per call'),
    }),
  }),
});

const UpdateCohortInput = builder.inputType('UpdateCohortInput', {
  description: 'Fields left out stay as they are; the name never changes.',
  fields: (t) => ({
    id: t.id({ required: true }),
    parentId: t.id({
      description:
        "Another cohort (null: a root cohort); never one of its own descendants. Admitted jobs stay; what they borrowed through the old parent may be reclaimed by their lenders, by the queues' preemption policies.",
    }),
    quotas: t.field({
      type: [QuotaInput],
      description:
        'Replaces what the cohort itself holds, lendable to its children. More is lendable at once (waiting jobs may be admitted); with less, admitted jobs stay and what they borrowed beyond it may be reclaimed.',
    }),
  }),
});

const id = (value: string | number, type: string) => decodeId(String(value), type);

builder.mutationFields((t) => ({
  updateFlavor: t.field({
    type: FlavorRef,
    description: 'Platform admins. Audited; the scheduler uses the change at once.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: UpdateFlavorInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      updateFlavor(ctx, {
        id: id(input.id, 'Flavor'),
        ...(input.gpuModel !== undefined ? { gpuModel: input.gpuModel } : {}),
        kind: input.kind,
        slicesPerGpu: input.slicesPerGpu,
        pricePerUnitHour: input.pricePerUnitHour,
        priceEffectiveFrom: input.priceEffectiveFrom,
      }),
  }),
  deleteFlavor: t.id({
    description:
      'Platform admins. CONFLICT while a node, a queue or cohort quota, a live job or an inference service uses it (all named). Its price versions go with it; charged costs stay. Returns its id.',
    authScopes: { platformAdmin: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) =>
      encodeGlobalID('Flavor', await deleteFlavor(ctx, id(args.id, 'Flavor'))),
  }),
  updateNodePool: t.field({
    type: NodePoolRef,
    description: 'Platform admins. Audited; the scheduler places on the new nodes at once.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: UpdateNodePoolInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      updateNodePool(ctx, {
        id: id(input.id, 'NodePool'),
        ...(input.dedicatedTenantId !== undefined
          ? { dedicatedTenantId: input.dedicatedTenantId ? id(input.dedicatedTenantId, 'Tenant') : null }
          : {}),
        nodes: input.nodes?.map((n) => ({
          name: n.name,
          flavor: n.flavor,
          gpus: n.gpus,
          cpu: n.cpuMillis,
          memory: n.memoryMiB,
        })),
      }),
  }),
  deleteNodePool: t.id({
    description:
      'Platform admins. CONFLICT while it has nodes (empty it with updateNodePool first) or a queue names it as its dedicated pool. Returns its id.',
    authScopes: { platformAdmin: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) =>
      encodeGlobalID('NodePool', await deleteNodePool(ctx, id(args.id, 'NodePool'))),
  }),
  updateCohort: t.field({
    type: CohortRef,
    description: 'Platform admins. Audited; the scheduler uses the new tree and quotas at once.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: UpdateCohortInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      updateCohort(ctx, {
        id: id(input.id, 'Cohort'),
        ...(input.parentId !== undefined
          ? { parentId: input.parentId ? id(input.parentId, 'Cohort') : null }
          : {}),
        ...(input.quotas ? { quotas: toQuotaSpec(input.quotas) } : {}),
      }),
  }),
  deleteCohort: t.id({
    description:
      'Platform admins. CONFLICT while queues belong to it or cohorts nest under it (named). Returns its id.',
    authScopes: { platformAdmin: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) =>
      encodeGlobalID('Cohort', await deleteCohort(ctx, id(args.id, 'Cohort'))),
  }),
}));
