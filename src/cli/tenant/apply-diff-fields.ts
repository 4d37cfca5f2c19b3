// `fairway apply`'s plan, field by field: what the planners of apply-diff-platform.ts and
// apply-diff-tenants.ts share — the IDs by `kind:name`, comparing the file's fields with the
// server's (quotas limit by limit), and turning changes and blocks into an ObjectPlan.
import type { FieldChange, IdBook, ObjectKind, ObjectPlan, Step } from './apply-diff.js';
import type { QuotaSpec } from './apply-spec.js';
import type { QuotaLine } from './apply-state.js';

export const ID = (kind: ObjectKind, name: string) => `${kind}:${name}`;
export const need = (ids: IdBook, kind: ObjectKind, name: string): string => {
  const id = ids.get(ID(kind, name));
  // The plan orders creates before their users and blocks unknown references, so this is a bug.
  if (!id) throw new Error(`internal: no id for ${kind} ${name}`);
  return id;
};

export function result(
  kind: ObjectKind,
  name: string,
  exists: boolean,
  changes: FieldChange[],
  notes: string[],
  blocked: string[],
  steps: Step[],
  notCompared: string[] = [],
): ObjectPlan {
  if (blocked.length)
    return { kind, name, action: 'blocked', changes, notes: [...blocked, ...notes], notCompared, steps: [] };
  const action = !exists ? 'create' : changes.length ? 'update' : 'unchanged';
  return { kind, name, action, changes, notes, notCompared, steps: action === 'unchanged' ? [] : steps };
}

/** Fields given in the file whose value differs from the server's. */
export function compare(
  fields: Record<string, unknown>,
  current: Record<string, unknown> | undefined,
): FieldChange[] {
  const out: FieldChange[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    const old = current?.[field];
    if (!current || !same(old, value))
      out.push({ field, old: current ? (old ?? null) : undefined, new: value });
  }
  return out;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export function quotaLines(quotas: QuotaSpec[]): QuotaLine[] {
  return quotas.map((q) => ({
    flavor: q.flavor,
    resource: q.resource,
    nominal: q.nominal,
    borrowingLimit: q.borrowingLimit ?? null,
    lendingLimit: q.lendingLimit ?? null,
  }));
}

/**
 * As compare(), but quotas one by one (`quotas[h100-80g/GPU].nominal: 16 → 24`), so a diff
 * names the limit that changed; current undefined: the object is new.
 */
export function quotaAware(
  want: Record<string, unknown> & { quotas?: QuotaLine[] },
  current: (Record<string, unknown> & { quotas: QuotaLine[] }) | undefined,
): FieldChange[] {
  const { quotas, ...rest } = want;
  const changes = compare(rest, current);
  if (!quotas) return changes;
  const key = (q: QuotaLine) => `${q.flavor}/${q.resource}`;
  const have = new Map((current?.quotas ?? []).map((q) => [key(q), q]));
  const wanted = new Map(quotas.map((q) => [key(q), q]));
  for (const [k, w] of wanted) {
    const h = have.get(k);
    if (!h) changes.push({ field: `quotas[${k}]`, old: current ? null : undefined, new: limits(w) });
    else
      for (const f of ['nominal', 'borrowingLimit', 'lendingLimit'] as const)
        if (h[f] !== w[f]) changes.push({ field: `quotas[${k}].${f}`, old: h[f], new: w[f] });
  }
  for (const [k, h] of have)
    if (!wanted.has(k)) changes.push({ field: `quotas[${k}]`, old: limits(h), new: null });
  return changes;
}

function limits(q: QuotaLine): Record<string, number> {
  return Object.fromEntries(
    Object.entries({
      nominal: q.nominal,
      borrowingLimit: q.borrowingLimit,
      lendingLimit: q.lendingLimit,
    }).filter(([, v]) => v !== null),
  ) as Record<string, number>;
}
