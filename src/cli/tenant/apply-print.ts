// `fairway apply`: the plan for people (a terraform-like listing) and for scripts (--json).
import type { ObjectPlan, Plan } from './apply-diff.js';

const SIGN: Record<ObjectPlan['action'], string> = {
  create: '+',
  update: '~',
  unchanged: '=',
  blocked: '!',
  delete: '-',
};

export function describe(o: Pick<ObjectPlan, 'kind' | 'name'>): string {
  return `${o.kind} ${o.name}`;
}

export function show(value: unknown): string {
  if (value === undefined || value === null) return '(none)';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function summary(plan: Plan): Record<ObjectPlan['action'], number> {
  const count = { create: 0, update: 0, unchanged: 0, blocked: 0, delete: 0 };
  for (const o of plan.objects) count[o.action]++;
  return count;
}

/** Lines for a person: changed and blocked objects with their fields, then what is left alone. */
export function planLines(plan: Plan, file: string): string[] {
  const lines: string[] = [];
  for (const o of plan.objects) {
    if (o.action === 'unchanged') continue;
    lines.push(`${SIGN[o.action]} ${describe(o)}`);
    for (const c of o.changes)
      lines.push(
        o.action === 'create'
          ? `    ${c.field}: ${show(c.new)}`
          : `    ${c.field}: ${show(c.old)} → ${show(c.new)}`,
      );
    for (const n of o.notes) lines.push(`    ${o.action === 'blocked' ? 'cannot apply' : 'note'}: ${n}`);
  }
  const notCompared = plan.objects.filter((o) => o.action !== 'create' && o.notCompared.length);
  if (notCompared.length) {
    lines.push('not compared (the API cannot read these back; they are sent when the object is created):');
    for (const o of notCompared) lines.push(`    ${describe(o)}: ${o.notCompared.join(', ')}`);
  }
  if (plan.unmanaged.length) {
    lines.push(
      plan.prune
        ? 'not pruned (on the server, not in the file; the API cannot delete these):'
        : 'not managed (on the server, not in the file; left as they are):',
    );
    for (const u of plan.unmanaged) lines.push(`    ${describe(u)}${u.note ? `: ${u.note}` : ''}`);
  }
  const s = summary(plan);
  lines.push(
    `${file}: ${s.create} to create, ${s.update} to update, ${plan.prune ? `${s.delete} to delete, ` : ''}${s.unchanged} unchanged${s.blocked ? `, ${s.blocked} that cannot be applied` : ''}.`,
  );
  return lines;
}

export function planJson(plan: Plan): Record<string, unknown> {
  return {
    objects: plan.objects.map((o) => ({
      kind: o.kind,
      name: o.name,
      action: o.action,
      changes: o.changes.map((c) => ({ field: c.field, old: c.old ?? null, new: c.new ?? null })),
      notes: o.notes,
      notCompared: o.notCompared,
    })),
    unmanaged: plan.unmanaged,
    prune: plan.prune,
    summary: summary(plan),
  };
}
