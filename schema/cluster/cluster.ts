import { z } from 'zod';
import {
  createCohort,
  createFlavor,
  createNodePool,
  listCohorts,
  listFlavors,
  listNodePools,
  listNodes,
} from '../../src/services/cluster/index.js';
import { listPriorityClasses } from '../../src/services/jobs/index.js';
import { currentFlavorPrice } from '../../src/services/metering/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { ClusterNodeRef, CohortRef, FlavorRef, NodePoolRef, PriorityClassRef } from '../refs.js';
import { isEntity } from '../tenancy/index.js';
import { QuotaInput, QuotaRef, quotaLines, toQuotaSpec } from './quota.js';

export const FlavorKindEnum = builder.enumType('FlavorKind', {
  values: {
    GPU: { value: 'gpu', description: 'Whole GPUs (fractions of one GPU in 1/1000 steps allowed per pod)' },
    MIG: { value: 'mig', description: 'MIG slices; slicesPerGpu per physical GPU' },
    TIMESLICE: { value: 'timeslice', description: 'Time-sliced shares; slicesPerGpu per GPU' },
  } as const,
});

export const PreemptibleEnum = builder.enumType('Preemptible', {
  values: {
    YES: { value: 'yes' },
    NO: { value: 'no' },
    RECLAIM_ONLY: {
      value: 'reclaim-only',
      description: "Only by a queue reclaiming what this job's queue borrowed",
    },
  } as const,
});

builder.node(FlavorRef, {
  description: 'One kind of accelerator capacity and its price.',
  id: { resolve: (f) => f.id },
  isTypeOf: (v) => isEntity(v, 'Flavor'),
  fields: (t) => ({
    name: t.exposeString('name'),
    kind: t.field({ type: FlavorKindEnum, resolve: (f) => f.kind }),
    gpuModel: t.string({ nullable: true, resolve: (f) => f.gpuModel ?? null }),
    slicesPerGpu: t.int({ nullable: true, resolve: (f) => f.slicesPerGpu ?? null }),
    pricePerUnitHour: t.float({
      description:
        "Price of one unit (GPU, slice or share) for one hour now: the price book's version in effect since priceEffectiveFrom, as the ledger charges it (0 when the flavor has none). setFlavorPrice and updateFlavor add versions; priceBook lists the scheduled ones.",
      resolve: async (f, _a, ctx) => (await currentFlavorPrice(ctx, f.name))?.pricePerUnitHour ?? 0,
    }),
    priceEffectiveFrom: t.field({
      type: 'DateTime',
      nullable: true,
      description:
        'Since when pricePerUnitHour holds (the epoch for the price set at creation); null when the flavor has no price.',
      resolve: async (f, _a, ctx) => (await currentFlavorPrice(ctx, f.name))?.effectiveFrom ?? null,
    }),
  }),
});

builder.node(NodePoolRef, {
  description: 'Nodes managed together; a dedicated pool serves one tenant only.',
  id: { resolve: (p) => p.id },
  isTypeOf: (v) => isEntity(v, 'NodePool'),
  fields: (t) => ({
    name: t.exposeString('name'),
    dedicated: t.boolean({ resolve: (p) => p.dedicatedTenant != null }),
    nodes: t.field({ type: [ClusterNodeRef], resolve: (p, _args, ctx) => listNodes(ctx, p.id) }),
  }),
});

builder.node(ClusterNodeRef, {
  description: 'A node, its capacity and what is free on it now.',
  id: { resolve: (n) => n.id },
  isTypeOf: (v) => isEntity(v, 'ClusterNode'),
  fields: (t) => ({
    name: t.exposeString('name'),
    flavor: t.string({ resolve: (n) => n.flavor.name }),
    gpus: t.exposeInt('gpus'),
    cpuMillis: t.int({ resolve: (n) => n.cpu }),
    memoryMiB: t.int({ resolve: (n) => n.memory }),
    unschedulable: t.exposeBoolean('unschedulable', {
      description:
        'Cordoned, not ready, or gone from the cluster while jobs still hold it: nothing new is placed here.',
    }),
    freeGpus: t.float({
      description: 'Free GPU units (slices or shares for those flavors), from the scheduler.',
      resolve: (n, _args, ctx) => ctx.scheduler.nodeStatus().find((s) => s.name === n.name)?.free.gpu ?? 0,
    }),
  }),
});

builder.node(CohortRef, {
  description: 'A group of queues that lend each other unused quota; cohorts nest.',
  id: { resolve: (c) => c.id },
  isTypeOf: (v) => isEntity(v, 'Cohort'),
  fields: (t) => ({
    name: t.exposeString('name'),
    parentName: t.string({ nullable: true, resolve: (c) => c.parent?.name ?? null }),
    quotas: t.field({ type: [QuotaRef], resolve: (c) => quotaLines(c.quotas) }),
  }),
});

PriorityClassRef.implement({
  fields: (t) => ({
    name: t.exposeString('name'),
    value: t.exposeInt('value'),
    preemptible: t.field({ type: PreemptibleEnum, resolve: (p) => p.preemptible }),
    description: t.string({ nullable: true, resolve: (p) => p.description ?? null }),
    requiresGrant: t.boolean({
      description:
        'Only projects granted it may use it (platform admins grant it to tenants, tenant admins to projects).',
      resolve: (p) => p.requiresGrant,
    }),
  }),
});

builder.queryFields((t) => ({
  flavors: t.field({
    type: [FlavorRef],
    authScopes: { authenticated: true },
    resolve: (_r, _a, ctx) => listFlavors(ctx),
  }),
  priorityClasses: t.field({
    type: [PriorityClassRef],
    authScopes: { authenticated: true },
    resolve: (_r, _a, ctx) => listPriorityClasses(ctx),
  }),
  nodePools: t.field({
    type: [NodePoolRef],
    description: 'Platform admins.',
    authScopes: { platformAdmin: true },
    resolve: (_r, _a, ctx) => listNodePools(ctx),
  }),
  cohorts: t.field({
    type: [CohortRef],
    description: 'Platform admins.',
    authScopes: { platformAdmin: true },
    resolve: (_r, _a, ctx) => listCohorts(ctx),
  }),
}));

export const flavorName = z
  .string()
  .regex(
    /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/,
    'use lowercase letters, digits, dots and dashes (e.g. h100-80g, a100-1g.10gb)',
  );

const CreateFlavorInput = builder.inputType('CreateFlavorInput', {
  fields: (t) => ({
    name: t.string({ required: true, validate: flavorName }),
    kind: t.field({ type: FlavorKindEnum, required: true }),
    gpuModel: t.string({ validate: z.string().max(100) }),
    slicesPerGpu: t.int({
      validate: z.number().int().min(1, 'must be at least 1').max(1000, 'must be at most 1000'),
    }),
    pricePerUnitHour: t.float({
      required: true,
      validate: z.number().min(0, 'must not be negative').max(1e6),
    }),
  }),
});

export const NodeInput = builder.inputType('NodeInput', {
  fields: (t) => ({
    name: t.string({
      required: true,
      validate: z
        .string()
        .regex(/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/, 'use lowercase letters, digits, dots and dashes'),
    }),
    flavor: t.string({ required: true, validate: flavorName }),
    gpus: t.int({
      required: true,
      validate: z.number().int().min(0, 'must not be negative').max(64, 'at most 64 GPUs per node'),
    }),
    cpuMillis: t.int({ required: true, validate: z.number().int().min(0, 'must not be negative') }),
    memoryMiB: t.int({ required: true, validate: z.number().int().min(0, 'must not be negative') }),
  }),
});

const CreateNodePoolInput = builder.inputType('CreateNodePoolInput', {
  fields: (t) => ({
    name: t.string({ required: true, validate: flavorName }),
    dedicatedTenantId: t.id({ description: "Only this tenant's jobs may run here." }),
    nodes: t.field({
      type: [NodeInput],
      required: true,
      validate: z.array(z.any()).max(5000, 'at most 5000 nodes per call'),
    }),
  }),
});

const CreateCohortInput = builder.inputType('CreateCohortInput', {
  fields: (t) => ({
    name: t.string({ required: true, validate: flavorName }),
    parentId: t.id(),
    quotas: t.field({
      type: [QuotaInput],
      description: 'Capacity the cohort itself holds, lendable to its children.',
    }),
  }),
});

builder.mutationFields((t) => ({
  createFlavor: t.field({
    type: FlavorRef,
    description: 'Platform admins.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: CreateFlavorInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      createFlavor(ctx, {
        name: input.name,
        kind: input.kind,
        gpuModel: input.gpuModel,
        slicesPerGpu: input.slicesPerGpu,
        pricePerUnitHour: input.pricePerUnitHour,
      }),
  }),
  createNodePool: t.field({
    type: NodePoolRef,
    description: 'Platform admins.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: CreateNodePoolInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      createNodePool(ctx, {
        name: input.name,
        dedicatedTenantId: input.dedicatedTenantId
          ? decodeId(String(input.dedicatedTenantId), 'Tenant')
          : null,
        nodes: input.nodes.map((n) => ({
          name: n.name,
          flavor: n.flavor,
          gpus: n.gpus,
          cpu: n.cpuMillis,
          memory: n.memoryMiB,
        })),
      }),
  }),
  createCohort: t.field({
    type: CohortRef,
    description: 'Platform admins.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: CreateCohortInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      createCohort(ctx, {
        name: input.name,
        parentId: input.parentId ? decodeId(String(input.parentId), 'Cohort') : null,
        quotas: toQuotaSpec(input.quotas ?? []),
      }),
  }),
}));
