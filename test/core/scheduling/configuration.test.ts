// Configuration (src/core/scheduling/configure.ts, src/core/scheduling/quota-config.ts), called directly:
// quota specs in
// internal units with isolation levels applied, windows laid over base quotas, the tree rebuilt.
import { describe, expect, it } from 'vitest';
import { removeNode, upsertQueue } from '../../../src/core/scheduling/configure.js';
import { SchedulerInputError } from '../../../src/core/scheduling/errors.js';
import { CPU, GPU } from '../../../src/core/scheduling/quota.js';
import { convertQuotas, effectiveQuotas, refreshWindows } from '../../../src/core/scheduling/quota-config.js';
import { makeJob, makeQueue, nodes } from '../builders.js';
import { admit, makeCore, queueOf } from '../core-builders.js';

const spec = { h100: { gpu: { nominal: 8, borrowingLimit: 4, lendingLimit: 2 }, cpu: { nominal: 64_000 } } };

describe('quota conversion', () => {
  const core = () => makeCore({ queues: [] }).core;

  it('GPUs become milli-units, other resources stay; undeclared limits are null', () => {
    const fq = convertQuotas(core(), spec, 'ELASTIC', 'q').get('h100');
    expect(fq?.nominal[GPU]).toBe(8000);
    expect(fq?.borrowingLimit[GPU]).toBe(4000);
    expect(fq?.lendingLimit[GPU]).toBe(2000);
    expect(fq?.nominal[CPU]).toBe(64_000);
    expect(fq?.borrowingLimit[CPU]).toBeNull();
    expect(fq?.declared).toEqual([true, true, false]);
  });

  it('isolation levels are one knob over the limits', () => {
    const c = core();
    const at = (iso: 'DEDICATED' | 'GUARANTEED' | 'BEST_EFFORT') => {
      const fq = convertQuotas(c, spec, iso, 'q').get('h100');
      return [fq?.nominal[GPU], fq?.borrowingLimit[GPU], fq?.lendingLimit[GPU]];
    };
    expect(at('DEDICATED')).toEqual([8000, 0, 0]);
    expect(at('GUARANTEED')).toEqual([8000, 0, 2000]);
    expect(at('BEST_EFFORT')).toEqual([0, 4000, null]);
  });

  it('rejects unknown flavors and negative or non-numeric quantities with their codes', () => {
    const c = core();
    const code = (f: () => unknown): string | undefined => {
      try {
        f();
      } catch (e) {
        return (e as SchedulerInputError).code;
      }
      return undefined;
    };
    expect(code(() => convertQuotas(c, { nope: { gpu: { nominal: 1 } } }, 'ELASTIC', 'q'))).toBe(
      'UNKNOWN_FLAVOR',
    );
    expect(code(() => convertQuotas(c, { h100: { gpu: { nominal: -1 } } }, 'ELASTIC', 'q'))).toBe(
      'NEGATIVE_QUANTITY',
    );
    expect(code(() => convertQuotas(c, { h100: { gpu: { nominal: Number.NaN } } }, 'ELASTIC', 'q'))).toBe(
      'INVALID_QUANTITY',
    );
  });
});

describe('time windows over base quotas', () => {
  // Monday 12:00 UTC (the builders' clock) is inside 08:00–20:00.
  const window = {
    days: [1, 2, 3, 4, 5],
    start: '08:00',
    end: '20:00',
    timeZone: 'UTC',
    quotas: { h100: { gpu: { nominal: 16 } } },
  };

  it('an open window replaces the resources it names and keeps the rest', () => {
    const { core } = makeCore({
      nodes: nodes(2),
      queues: [makeQueue('a').nominal('h100', 4).nominal('h100', 32_000, 'cpu').window(window)],
    });
    const a = queueOf(core, 'a');
    expect(a.activeWindow).toBe(0);
    const fq = effectiveQuotas(core, a).get('h100');
    expect(fq?.nominal[GPU]).toBe(16_000);
    expect(fq?.nominal[CPU]).toBe(32_000);
  });

  it('a closing window rebuilds the tree and makes the excess reclaimable (nothing is killed)', () => {
    const { core, clock } = makeCore({
      nodes: nodes(2),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 4).window(window),
        makeQueue('b').cohort('c').nominal('h100', 0),
      ],
    });
    admit(core, makeJob('big').queue('a').gpus(8));
    clock.advance(9 * 3_600_000); // 21:00
    refreshWindows(core, clock.now());
    const a = queueOf(core, 'a');
    expect(a.activeWindow).toBeNull();
    expect(a.node.flavors.get('h100')?.nominal[GPU]).toBe(4000);
    expect(a.node.flavors.get('h100')?.usage[GPU]).toBe(8000);
    expect(a.windowReclaimable).toBe(true);
  });
});

describe('nodes and queues', () => {
  it('a node with pods cannot be removed; a queue update keeps its jobs and re-charges them', () => {
    const { core } = makeCore({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    admit(core, makeJob('r').queue('a').gpus(4));
    expect(() => removeNode(core, 'h100-0')).toThrow(SchedulerInputError);
    upsertQueue(core, makeQueue('a').nominal('h100', 6).build());
    const fq = queueOf(core, 'a').node.flavors.get('h100');
    expect([fq?.nominal[GPU], fq?.usage[GPU]]).toEqual([6000, 4000]);
  });
});
