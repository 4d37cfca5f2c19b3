import type { MikroORM } from '@mikro-orm/core';
import { DEFAULT_PRIORITY_CLASSES } from '../../core/scheduling/index.js';
import { PriorityClassRow } from '../../persistence/cluster/index.js';

const DESCRIPTIONS: Record<string, string> = {
  'inference-critical': 'Online serving; never preempted; granted by platform admins.',
  production: 'Production fine-tuning; preempted only to reclaim capacity its queue borrowed.',
  training: 'Core training; preemptible.',
  experiment: 'Notebooks and sweeps; preemptible, first to go.',
};

/** Capacity that is never preempted is granted (platform → tenant → project), not taken. */
const REQUIRES_GRANT = new Set(['inference-critical']);

/** The design's default priority classes, written once to an empty table. */
export async function ensurePriorityClasses(orm: MikroORM): Promise<void> {
  const em = orm.em.fork({ clear: true });
  if ((await em.count(PriorityClassRow, {})) > 0) return;
  for (const c of DEFAULT_PRIORITY_CLASSES) {
    em.create(PriorityClassRow, {
      name: c.name,
      value: c.value,
      preemptible: c.preemptible,
      description: DESCRIPTIONS[c.name] ?? null,
      requiresGrant: REQUIRES_GRANT.has(c.name),
    });
  }
  await em.flush();
}
