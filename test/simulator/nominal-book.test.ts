import { describe, expect, it } from 'vitest';
import { NominalBook } from '../../src/simulator/nominal-book.js';
import type { SimQueue } from '../../src/simulator/queues.js';
import type { TraceJob } from '../../src/simulator/trace.js';

const job = (gpus: number, pods = 1, extra: Partial<TraceJob> = {}): TraceJob => ({
  line: 2,
  id: 'j',
  submitMs: 0,
  durationMs: 1000,
  tenant: 'A',
  gpus,
  pods,
  ...extra,
});

// qa: 4 GPUs nominal on h100, 2 on a100; 8 CPUs declared on h100 only.
const qa: SimQueue = {
  line: 1,
  name: 'qa',
  tenant: 'A',
  quotas: { h100: { gpu: { nominal: 4 }, cpu: { nominal: 8000 } }, a100: { gpu: { nominal: 2 } } },
};

describe('NominalBook: usage against the queues file nominal', () => {
  it('a job fits while the unused nominal of some flavor holds all its pods', () => {
    const b = new NominalBook();
    expect(b.fits(qa, job(2, 2))).toBe(true);
    b.add(qa, 'h100', job(2, 2), 1);
    // h100 is full; a100 still has 2
    expect(b.fits(qa, job(2))).toBe(true);
    expect(b.fits(qa, job(3))).toBe(false);
    expect(b.fits(qa, job(1, 1, { gpuType: 'h100' }))).toBe(false);
  });

  it('stopping a job (-1) gives its nominal back', () => {
    const b = new NominalBook();
    b.add(qa, 'h100', job(4), 1);
    expect(b.fits(qa, job(1, 1, { gpuType: 'h100' }))).toBe(false);
    b.add(qa, 'h100', job(4), -1);
    expect(b.fits(qa, job(4, 1, { gpuType: 'h100' }))).toBe(true);
  });

  it('cpu counts only where declared; GPUs always count', () => {
    const b = new NominalBook();
    // 10 CPUs: over h100's 8 CPUs, but a100 declares no cpu, and 1 GPU fits its 2
    expect(b.fits(qa, job(1, 1, { cpuMilli: 10_000 }))).toBe(true);
    expect(b.fits(qa, job(1, 1, { cpuMilli: 10_000, gpuType: 'h100' }))).toBe(false);
    // a flavor without a GPU quota has a nominal of 0 GPUs
    const cpuOnly: SimQueue = {
      line: 1,
      name: 'qc',
      tenant: 'A',
      quotas: { h100: { cpu: { nominal: 8000 } } },
    };
    expect(b.fits(cpuOnly, job(1))).toBe(false);
    expect(b.fits(cpuOnly, job(0, 1, { cpuMilli: 1000 }))).toBe(true);
  });

  it('a flavor the queue has no quota for never fits', () => {
    expect(new NominalBook().fits(qa, job(1, 1, { gpuType: 'l4' }))).toBe(false);
  });
});
