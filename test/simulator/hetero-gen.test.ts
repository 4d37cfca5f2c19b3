// The seeded heterogeneous fill generator: deterministic per seed, its shape statistics near the
// documented distributions, its files readable by the simulator, and a small fill on them.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateHetero, NODE_TYPES, writeHetero } from '../../src/simulator/hetero-gen.js';
import { runFill } from '../../src/simulator/fill.js';
import { loadInput } from '../../src/simulator/run.js';

describe('generate-hetero', () => {
  it('is deterministic for a seed and differs between seeds', () => {
    const a = generateHetero({ seed: 7, scale: 0.1 });
    expect(generateHetero({ seed: 7, scale: 0.1 })).toEqual(a);
    expect(generateHetero({ seed: 8, scale: 0.1 }).pods).not.toEqual(a.pods);
  });

  it('at scale 1: ~1,200 GPU nodes, ~6,200 GPUs of 7 models, 8,000 pods with the documented mix', () => {
    const g = generateHetero({ seed: 1 });
    const gpuNodes = g.nodes.filter((n) => n.gpus > 0);
    expect(gpuNodes.reduce((s, n) => s + n.count, 0)).toBe(1213);
    expect(gpuNodes.reduce((s, n) => s + n.count * n.gpus, 0)).toBeGreaterThan(6100);
    expect(new Set(gpuNodes.map((n) => n.model)).size).toBe(7);
    const p = g.pods;
    expect(p).toHaveLength(8000);
    const share = (f: (x: (typeof p)[number]) => boolean) => p.filter(f).length / p.length;
    expect(share((x) => x.gpus === 0)).toBeCloseTo(0.13, 1);
    expect(share((x) => x.gpus > 0 && x.gpus < 1)).toBeCloseTo(0.38, 1);
    expect(share((x) => x.gpus === 1)).toBeCloseTo(0.455, 1);
    expect(share((x) => x.gpus >= 2)).toBeGreaterThan(0.02);
    expect(Math.min(...p.filter((x) => x.gpus > 0).map((x) => x.gpus))).toBe(0.05);
    expect(Math.max(...p.map((x) => x.gpus))).toBe(8);
    const pinned = share((x) => x.model !== undefined) / share((x) => x.gpus > 0);
    expect(pinned).toBeGreaterThan(0.03);
    expect(pinned).toBeLessThan(0.07);
    // a pinned pod always fits some node of its model
    for (const x of p.filter((y) => y.model)) expect(NODE_TYPES.some((t) => t.model === x.model && t.gpus >= x.gpus && t.cpuMilli >= x.cpuMilli && t.memoryMib >= x.memoryMib)).toBe(true);
  });

  it('writes files the simulator reads; a small fill runs on the per-model and merged variants', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hetero-'));
    const f = writeHetero({ seed: 3, scale: 0.04, outDir: dir });
    expect(readFileSync(f.cluster, 'utf8').split('\n')[1]).toMatch(/^g2-8g-0,default,G2,8,96000,393216,\d+$/);
    for (const [trace, cluster, queues] of [[f.trace, f.cluster, f.queues], [f.traceMerged, f.clusterMerged, f.queuesMerged]] as const) {
      const input = loadInput({ trace, cluster, queues });
      expect(input.trace).toHaveLength(f.pods);
      for (const placement of ['best-fit', 'fragmentation-aware'] as const) {
        const out = runFill(input, { policy: 'fairway', placement, seed: 1, targetsPct: [50, 100] });
        expect(out.points[0]!.allocationRatio).toBeGreaterThan(0.4);
        expect(out.points[1]!.allocationRatio).toBeGreaterThan(0.8);
      }
    }
  });
});
