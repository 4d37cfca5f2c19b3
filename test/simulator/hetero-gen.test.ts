// The seeded heterogeneous fill generator: deterministic per seed, its shape statistics near the
// documented distributions, its files readable by the simulator, and a small fill on them.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFill } from '../../src/simulator/fill.js';
import { generateHetero, NODE_TYPES, writeHetero } from '../../src/simulator/hetero-gen.js';
import { convertOpenb } from '../../src/simulator/openb.js';
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
    for (const x of p.filter((y) => y.model))
      expect(
        NODE_TYPES.some(
          (t) =>
            t.model === x.model && t.gpus >= x.gpus && t.cpuMilli >= x.cpuMilli && t.memoryMib >= x.memoryMib,
        ),
      ).toBe(true);
  });

  it('writes files the simulator reads; a small fill runs on the per-model and merged variants', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hetero-'));
    const f = writeHetero({ seed: 3, scale: 0.04, outDir: dir });
    expect(readFileSync(f.cluster, 'utf8').split('\n')[1]).toMatch(/^g2-8g-0,default,G2,8,96000,393216,\d+$/);
    for (const [trace, cluster, queues] of [
      [f.trace, f.cluster, f.queues],
      [f.traceMerged, f.clusterMerged, f.queuesMerged],
    ] as const) {
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

describe('convert-openb', () => {
  it('maps the node and pod lists: models to flavors, shares, one-model pins, multi-model pins unpinned', () => {
    const dir = mkdtempSync(join(tmpdir(), 'openb-'));
    writeFileSync(
      join(dir, 'n.csv'),
      'sn,cpu_milli,memory_mib,gpu,model\nc-0,32000,262144,0,nan\ng-0,128000,786432,8,G3\nv-0,96000,786432,8,V100M32\nv-1,96000,786432,8,V100M32\nt-0,104000,524288,2,T4\n',
    );
    writeFileSync(
      join(dir, 'p.csv'),
      'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n' +
        'a,88000,327680,8,1000,,Burstable,Succeeded,100,200,100\nb,4000,15258,1,220,,BE,Running,110,300,110\nc,16000,32768,1,1000,V100M32|G3,LS,Running,120,130,120\nd,16000,32768,1,1000,T4,LS,Running,120,130,120\ne,20000,65536,0,0,,LS,Running,90,95,90\n',
    );
    const r = convertOpenb({ nodeList: join(dir, 'n.csv'), podList: join(dir, 'p.csv'), outDir: dir });
    expect([r.nodes, r.gpus, r.pods, r.multiModelPins]).toEqual([5, 26, 5, 1]);
    expect(readFileSync(r.trace, 'utf8').trim().split('\n').slice(1)).toEqual([
      'a,100,100,openb,8,1,88000,327680,',
      'b,110,190,openb,0.22,1,4000,15258,',
      'c,120,10,openb,1,1,16000,32768,',
      'd,120,10,openb,1,1,16000,32768,T4',
      'e,90,5,openb,0,1,20000,65536,',
    ]);
    expect(Object.keys(JSON.parse(readFileSync(r.queues, 'utf8')).queues[0].quotas)).toEqual([
      'V100M32',
      'G3',
      'T4',
      'cpu',
    ]);
    expect(readFileSync(r.clusterMerged, 'utf8')).toContain('v-1,default,gpu,8,96000,786432,1');
    writeFileSync(
      join(dir, 'bad.csv'),
      'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nx,1,1,1,500,A100\n',
    );
    expect(() =>
      convertOpenb({ nodeList: join(dir, 'n.csv'), podList: join(dir, 'bad.csv'), outDir: dir }),
    ).toThrow(/bad.csv:2: gpu_spec 'A100' names a model no node has/);
  });
});
