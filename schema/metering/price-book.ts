import { z } from 'zod';
import type { FlavorPrice, PriceMultiplier } from '../../src/persistence/metering/index.js';
import {
  currencyOf,
  listPrices,
  type PriceBookView,
  setFlavorPrice,
  setPriceMultiplier,
} from '../../src/services/metering/index.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';

/** A version is current when it is the latest one already in effect; later ones are scheduled. */
const isCurrent = (row: { effectiveFrom: Date }, ctx: GraphQLContext, given?: boolean) =>
  given ?? row.effectiveFrom.getTime() <= ctx.now().getTime();

type Versioned<T> = { row: T; current?: boolean };

const FlavorPriceRef = builder.objectRef<Versioned<FlavorPrice>>('FlavorPrice').implement({
  description:
    'The price of one unit (GPU, MIG slice or time-slice share) of a flavor for one hour, from effectiveFrom on.',
  fields: (t) => ({
    flavor: t.string({ resolve: (v) => v.row.flavor }),
    pricePerUnitHour: t.float({ resolve: (v) => v.row.pricePerUnitHour }),
    effectiveFrom: t.field({ type: 'DateTime', resolve: (v) => v.row.effectiveFrom }),
    current: t.boolean({
      description: 'In effect now (false: scheduled).',
      resolve: (v, _a, ctx) => isCurrent(v.row, ctx, v.current),
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (v) => v.row.createdAt }),
  }),
});

const PriceMultiplierRef = builder.objectRef<Versioned<PriceMultiplier>>('PriceMultiplier').implement({
  description: "A priority class's multiplier on flavor prices, from effectiveFrom on (1 when none).",
  fields: (t) => ({
    priorityClass: t.string({ resolve: (v) => v.row.priorityClass }),
    multiplier: t.float({ resolve: (v) => v.row.multiplier }),
    effectiveFrom: t.field({ type: 'DateTime', resolve: (v) => v.row.effectiveFrom }),
    current: t.boolean({
      description: 'In effect now (false: scheduled).',
      resolve: (v, _a, ctx) => isCurrent(v.row, ctx, v.current),
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (v) => v.row.createdAt }),
  }),
});

const PriceBookRef = builder.objectRef<PriceBookView & { currency: string }>('PriceBook').implement({
  description:
    'Platform list prices: the versions in effect now and those scheduled. A cost already charged never changes.',
  fields: (t) => ({
    currency: t.exposeString('currency'),
    flavorPrices: t.field({ type: [FlavorPriceRef], resolve: (b) => b.flavorPrices }),
    multipliers: t.field({ type: [PriceMultiplierRef], resolve: (b) => b.multipliers }),
  }),
});

const SetFlavorPriceInput = builder.inputType('SetFlavorPriceInput', {
  fields: (t) => ({
    flavor: t.string({ required: true, validate: z.string().max(63) }),
    pricePerUnitHour: t.float({ required: true }),
    effectiveFrom: t.field({ type: 'DateTime', description: 'Default: now. Not in the past.' }),
  }),
});

const SetPriceMultiplierInput = builder.inputType('SetPriceMultiplierInput', {
  fields: (t) => ({
    priorityClass: t.string({ required: true, validate: z.string().max(63) }),
    multiplier: t.float({ required: true }),
    effectiveFrom: t.field({ type: 'DateTime', description: 'Default: now. Not in the past.' }),
  }),
});

builder.queryFields((t) => ({
  priceBook: t.field({
    type: PriceBookRef,
    description: 'Flavor prices and priority-class multipliers, current and scheduled (anyone signed in).',
    authScopes: { authenticated: true },
    resolve: async (_r, _a, ctx) => ({ ...(await listPrices(ctx)), currency: currencyOf(ctx) }),
  }),
}));

builder.mutationFields((t) => ({
  setFlavorPrice: t.field({
    type: FlavorPriceRef,
    description:
      "Platform admins. A new version of a flavor's price from effectiveFrom (default now; never in the past). Audited.",
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: SetFlavorPriceInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({
      row: await setFlavorPrice(ctx, {
        flavor: input.flavor,
        pricePerUnitHour: input.pricePerUnitHour,
        effectiveFrom: input.effectiveFrom ?? null,
      }),
    }),
  }),
  setPriceMultiplier: t.field({
    type: PriceMultiplierRef,
    description:
      "Platform admins. A new version of a priority class's multiplier from effectiveFrom (default now; never in the past). Audited.",
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: SetPriceMultiplierInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({
      row: await setPriceMultiplier(ctx, {
        priorityClass: input.priorityClass,
        multiplier: input.multiplier,
        effectiveFrom: input.effectiveFrom ?? null,
      }),
    }),
  }),
}));
