// Creating, changing and deleting priority classes (platform admins). The PriorityClass type and the
// priorityClasses query are in cluster.ts; granting a class to tenants and projects is tenancy's.
import { z } from 'zod';
import {
  createPriorityClass,
  deletePriorityClass,
  PRIORITY_VALUE_LIMIT,
  updatePriorityClass,
} from '../../src/services/cluster/index.js';
import { builder } from '../builder.js';
import { PriorityClassRef } from '../refs.js';
import { PreemptibleEnum } from './cluster.js';

const className = z.string().min(1).max(63);
const classValue = z
  .number()
  .int()
  .min(-PRIORITY_VALUE_LIMIT, `must be at least -${PRIORITY_VALUE_LIMIT}`)
  .max(PRIORITY_VALUE_LIMIT, `must be at most ${PRIORITY_VALUE_LIMIT}`);
const classDescription = z.string().max(200, 'must be at most 200 characters');

const CreatePriorityClassInput = builder.inputType('CreatePriorityClassInput', {
  fields: (t) => ({
    name: t.string({
      required: true,
      description: 'Unique; a Kubernetes name (lowercase letters, digits and dashes). It never changes.',
      validate: z
        .string()
        .regex(
          /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/,
          'use lowercase letters, digits and dashes (e.g. batch-low)',
        ),
    }),
    value: t.int({
      required: true,
      description: 'Higher goes first in its queue and may preempt lower.',
      validate: classValue,
    }),
    preemptible: t.field({
      type: PreemptibleEnum,
      required: true,
      description: 'NO: never preempted, so admitted within nominal quota only.',
    }),
    description: t.string({ description: 'A label.', validate: classDescription }),
    requiresGrant: t.boolean({
      defaultValue: false,
      description:
        'Only projects granted it may submit with it (grantTenantPriorityClass, then grantProjectAccess).',
    }),
  }),
});

const UpdatePriorityClassInput = builder.inputType('UpdatePriorityClassInput', {
  description:
    'Fields left out stay as they are. The name never changes: jobs, services, grants and prices name it.',
  fields: (t) => ({
    name: t.string({ required: true, validate: className }),
    value: t.int({
      description:
        'Higher goes first in its queue and may preempt lower. Pending jobs of the class are reordered at once; admitted jobs keep running, and who may preempt them follows the new value from now on.',
      validate: classValue,
    }),
    preemptible: t.field({
      type: PreemptibleEnum,
      description:
        "Whether the class's jobs may be preempted; applies to admitted jobs too from the next scheduling decision on. NO (never preempted, so within nominal quota only) is CONFLICT while admitted jobs of the class run on borrowed quota.",
    }),
    description: t.string({
      description: 'A label (null clears it).',
      validate: classDescription,
    }),
    requiresGrant: t.boolean({
      description:
        'Only projects granted it may submit with it (grantTenantPriorityClass, then grantProjectAccess). Checked at submit: jobs already submitted are not affected.',
    }),
  }),
});

builder.mutationFields((t) => ({
  createPriorityClass: t.field({
    type: PriorityClassRef,
    description:
      'Platform admins. CONFLICT if the name is taken. Audited; the scheduler knows the class at once. Its price multiplier is 1 until setPriceMultiplier.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: CreatePriorityClassInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      createPriorityClass(ctx, {
        name: input.name,
        value: input.value,
        preemptible: input.preemptible,
        description: input.description ?? null,
        requiresGrant: input.requiresGrant ?? false,
      }),
  }),
  updatePriorityClass: t.field({
    type: PriorityClassRef,
    description: 'Platform admins. Audited; the scheduler uses a new value or preemptibility at once.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: UpdatePriorityClassInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      updatePriorityClass(ctx, {
        name: input.name,
        value: input.value,
        preemptible: input.preemptible,
        ...(input.description !== undefined ? { description: input.description } : {}),
        requiresGrant: input.requiresGrant,
      }),
  }),
  deletePriorityClass: t.string({
    description:
      'Platform admins. CONFLICT while live jobs or inference services use it, a tenant holds a grant of it, a budget exempts it, or the API falls back to it (training, production, inference-critical), all named. Its price multipliers go with it; charged costs stay. Returns its name (createPriorityClass may use it again).',
    authScopes: { platformAdmin: true },
    args: { name: t.arg.string({ required: true, validate: className }) },
    resolve: (_r, args, ctx) => deletePriorityClass(ctx, args.name),
  }),
}));
