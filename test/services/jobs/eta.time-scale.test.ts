// The core reasons in the backend's clock. A declared hour runs one minute on the
// simulated cluster at time scale 60, so the spec the core gets (and its expected ends and ETAs)
// must say one minute.
import { describe, expect, it } from 'vitest';
import type { ExecutionBackend } from '../../../src/backends/port.js';
import { SimulatedBackend } from '../../../src/backends/simulated/simulated.js';
import type { Job } from '../../../src/persistence/jobs/entities.js';
import { jobSpec } from '../../../src/services/scheduling/specs.js';
import { makeCluster, makeQueue, nodes } from '../../core/builders.js';

const HOUR = 3_600_000;
const row = {
  id: 'j1',
  tenant: { id: 't-a' },
  project: null,
  priorityClass: 'training',
  submitTime: 1000,
  podSets: [{ name: 'main', count: 1, perPod: { gpu: 8 } }],
  expectedDurationMs: HOUR,
  maxRunMs: 2 * HOUR,
} as unknown as Job;

describe('durations in the backend clock', () => {
  it('the execution backend port exposes its time scale', async () => {
    const backend: ExecutionBackend = new SimulatedBackend({ timeScale: 60, utilizationIntervalMs: 0 });
    expect(backend.timeScale).toBe(60);
    expect(new SimulatedBackend({ utilizationIntervalMs: 0 }).timeScale).toBe(1);
    await backend.close();
  });

  it('jobSpec divides declared durations by the time scale (default 1 keeps them)', () => {
    expect(jobSpec(row, 'a', 60)).toMatchObject({ expectedDurationMs: 60_000, maxRunMs: 120_000 });
    expect(jobSpec(row, 'a')).toMatchObject({ expectedDurationMs: HOUR, maxRunMs: 2 * HOUR });
  });

  it("a pending job's ETA behind a declared hour at scale 60 is one minute away", () => {
    const { s, clock } = makeCluster({ nodes: nodes(1), queues: [makeQueue('a').nominal('h100', 8)] });
    s.submit(jobSpec({ ...row, id: 'run' } as Job, 'a', 60));
    s.cycle();
    s.submit(jobSpec({ ...row, id: 'wait', submitTime: 2000 } as Job, 'a', 60));
    s.cycle();
    expect(s.explain('run').expectedEnd).toBe(clock.now() + 60_000);
    expect(s.explain('wait').eta).toBe(clock.now() + 60_000);
  });
});
