// SLA eligibility counts only the resources a queue declares.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runReplay } from '../../src/simulator/replay.js';
import type { ReplayReport } from '../../src/simulator/report.js';
import { loadInput, simulate } from '../../src/simulator/run.js';

const tmp = mkdtempSync(join(tmpdir(), 'fw-sim-sla-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function files(trace: string, queues: string): { trace: string; cluster: string; queues: string } {
  const t = join(tmp, `trace-${Math.random().toString(36).slice(2)}.csv`);
  const c = join(tmp, 'cluster.csv');
  const q = join(tmp, `queues-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(t, trace);
  writeFileSync(c, 'name,gpu_type,gpus,cpu_milli,memory_mib\nn1,h100,4,16000,128000\n');
  writeFileSync(q, queues);
  return { trace: t, cluster: c, queues: q };
}

describe('SLA eligibility: only declared resources count', () => {
  // Queue qa declares only GPUs (nominal 2) on h100.
  // c1 at 0 s: 1 GPU + 4 CPUs + 16 GiB. GPUs 0 + 1 ≤ 2; cpu/memory are not declared → eligible.
  // g2 at 0 s: 2 GPUs. GPUs 1 + 2 = 3 > 2 → not eligible (GPUs always count).
  const gpuOnly = files(
    'id,submit_time,duration_s,tenant,gpus,cpu_milli,memory_mib\nc1,0,10,A,1,4000,16000\ng2,0,10,A,2,,\n',
    '{"queues":[{"name":"qa","tenant":"A","quotas":{"h100":{"gpu":{"nominal":2}}}}]}',
  );

  it('a job asking CPU and memory from a queue that declares only GPU is eligible', () => {
    const o = runReplay(loadInput(gpuOnly), { policy: 'static', placement: 'best-fit' });
    expect(o.jobs.map((j) => [j.id, j.slaEligible])).toEqual([
      ['c1', true],
      ['g2', false],
    ]);
  });

  it('SLA attainment: 1 eligible job, started at once (static and fairway; fifo too)', () => {
    const r = simulate({
      ...gpuOnly,
      policies: ['fairway', 'static', 'fifo'],
      placements: ['best-fit'],
      mode: 'replay',
      seed: 1,
    }).report as ReplayReport;
    for (const m of r.runs) {
      expect([m.policy, m.sla]).toEqual([m.policy, { eligible: 1, met: 1, attainment: 1 }]);
      expect(m.tenants[0]!.sla).toEqual({ eligible: 1, met: 1, attainment: 1 });
    }
    // g2 (ineligible) waits for c1 under static: quota 2, c1 holds 1
    expect(r.runs.find((m) => m.policy === 'static')!.waitSeconds.p99).toBe(10);
  });

  it('a declared resource still counts: cpu 2 + 2 CPUs over a nominal of 3 CPUs is not eligible', () => {
    const declared = files(
      'id,submit_time,duration_s,tenant,gpus,cpu_milli\nc1,0,10,A,1,2000\nc2,0,10,A,1,2000\n',
      '{"queues":[{"name":"qa","tenant":"A","quotas":{"h100":{"gpu":{"nominal":4},"cpu":{"nominal":3000}}}}]}',
    );
    const o = runReplay(loadInput(declared), { policy: 'static', placement: 'best-fit' });
    expect(o.jobs.map((j) => [j.id, j.slaEligible])).toEqual([
      ['c1', true],
      ['c2', false],
    ]);
  });
});
