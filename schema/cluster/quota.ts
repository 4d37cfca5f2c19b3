import { z } from 'zod';
import type { QuotaSpec, ResourceName, TimeWindowSpec } from '../../src/services/cluster/index.js';
import { builder } from '../builder.js';

/** Shared input and output types for quotas (queues and cohorts). */
export const ResourceEnum = builder.enumType('Resource', {
  values: {
    GPU: { value: 'gpu', description: 'GPUs, or MIG slices / time-slice shares on those flavors' },
    CPU: { value: 'cpu', description: 'millicores' },
    MEMORY: { value: 'memory', description: 'MiB' },
  } as const,
});

const quantity = z.number().min(0, 'must not be negative').max(1e9, 'is too large');

export const QuotaInput = builder.inputType('QuotaInput', {
  description:
    'One flavor/resource limit. Unset borrowingLimit = no limit; unset lendingLimit = all unused nominal may be lent.',
  fields: (t) => ({
    flavor: t.string({ required: true, validate: z.string().min(1).max(63) }),
    resource: t.field({ type: ResourceEnum, defaultValue: 'gpu' }),
    nominal: t.float({ required: true, validate: quantity }),
    borrowingLimit: t.float({ validate: quantity }),
    lendingLimit: t.float({ validate: quantity }),
  }),
});

const HH_MM = /^([01]\d|2[0-3]):[0-5]\d$/;
export const TimeWindowInput = builder.inputType('TimeWindowInput', {
  description: 'Quotas that apply while the window is open (e.g. weekdays 08:00–20:00 Europe/Berlin).',
  fields: (t) => ({
    days: t.intList({
      required: true,
      validate: z
        .array(z.number().int().min(0, 'days are 0 (Sunday) to 6').max(6, 'days are 0 (Sunday) to 6'))
        .min(1, 'name at least one day'),
    }),
    start: t.string({ required: true, validate: z.string().regex(HH_MM, 'use HH:MM, 00:00 to 23:59') }),
    end: t.string({ required: true, validate: z.string().regex(HH_MM, 'use HH:MM, 00:00 to 23:59') }),
    timeZone: t.string({
      required: true,
      validate: z.string().refine((zone) => {
        try {
          new Intl.DateTimeFormat('en', { timeZone: zone });
          return true;
        } catch {
          return false;
        }
      }, 'must be an IANA time zone such as Europe/Berlin'),
    }),
    quotas: t.field({ type: [QuotaInput], required: true }),
  }),
});

type QuotaRow = {
  flavor: string;
  resource?: ResourceName | null;
  nominal: number;
  borrowingLimit?: number | null;
  lendingLimit?: number | null;
};

export function toQuotaSpec(rows: readonly QuotaRow[]): QuotaSpec {
  const spec: QuotaSpec = {};
  for (const row of rows) {
    const resource = row.resource ?? 'gpu';
    spec[row.flavor] ??= {};
    spec[row.flavor]![resource] = {
      nominal: row.nominal,
      ...(row.borrowingLimit != null ? { borrowingLimit: row.borrowingLimit } : {}),
      ...(row.lendingLimit != null ? { lendingLimit: row.lendingLimit } : {}),
    };
  }
  return spec;
}

export function toTimeWindows(
  rows: readonly {
    days: number[];
    start: string;
    end: string;
    timeZone: string;
    quotas: readonly QuotaRow[];
  }[],
): TimeWindowSpec[] {
  return rows.map((w) => ({
    days: w.days,
    start: w.start,
    end: w.end,
    timeZone: w.timeZone,
    quotas: toQuotaSpec(w.quotas),
  }));
}

export interface QuotaLine {
  flavor: string;
  resource: ResourceName;
  nominal: number;
  borrowingLimit: number | null;
  lendingLimit: number | null;
}

export function quotaLines(spec: QuotaSpec): QuotaLine[] {
  return Object.entries(spec).flatMap(([flavor, resources]) =>
    Object.entries(resources ?? {}).map(([resource, limits]) => ({
      flavor,
      resource: resource as ResourceName,
      nominal: limits!.nominal,
      borrowingLimit: limits!.borrowingLimit ?? null,
      lendingLimit: limits!.lendingLimit ?? null,
    })),
  );
}

export const QuotaRef = builder.objectRef<QuotaLine>('Quota').implement({
  fields: (t) => ({
    flavor: t.exposeString('flavor'),
    resource: t.field({ type: ResourceEnum, resolve: (q) => q.resource }),
    nominal: t.exposeFloat('nominal'),
    borrowingLimit: t.float({ nullable: true, resolve: (q) => q.borrowingLimit }),
    lendingLimit: t.float({ nullable: true, resolve: (q) => q.lendingLimit }),
  }),
});
