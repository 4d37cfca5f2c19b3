// `fairway submit -f job.yaml`: the checkpoint declaration is checked in the file and sent as is.
import { describe, expect, it } from 'vitest';
import { CliError, EXIT } from '../../src/cli/tenant/context.js';
import { standing } from '../../src/cli/tenant/format.js';
import { parseJobFile } from '../../src/cli/tenant/job-file.js';
import { toSubmitInput } from '../../src/cli/tenant/submit.js';

const file = (checkpoint: string) =>
  `name: train\npodSets:\n  - gpusPerPod: 1\nexpectedDurationSeconds: 3600\n${checkpoint}`;

describe('job file: checkpoint', () => {
  it('is sent to submitJob as declared', () => {
    const job = parseJobFile(file('checkpoint:\n  intervalSeconds: 900\n  resumable: true\n'), 'job.yaml');
    expect(toSubmitInput(job, {}, 'k').checkpoint).toEqual({ intervalSeconds: 900, resumable: true });
    expect(toSubmitInput(parseJobFile(file(''), 'job.yaml'), {}, 'k')).not.toHaveProperty('checkpoint');
  });

  it('ls/watch lines show the GPU-hours lost beside the preemption count', () => {
    const base = { state: 'RUNNING' as const, eta: null, position: null, pendingReason: null };
    expect(standing({ ...base, preemptionCount: 2, lostGpuHours: 44.444 })).toBe(
      'RUNNING  preempted 2× (44.4 GPU-h lost)',
    );
    expect(standing({ ...base, preemptionCount: 1, lostGpuHours: 0.25 })).toBe(
      'RUNNING  preempted 1× (0.25 GPU-h lost)',
    );
    expect(standing({ ...base, preemptionCount: 1, lostGpuHours: 0 })).toBe(
      'RUNNING  preempted 1× (0 GPU-h lost)',
    );
    expect(standing({ ...base, preemptionCount: 0, lostGpuHours: 0 })).toBe('RUNNING');
  });

  it('refuses a bad interval or an unknown field with file:line', () => {
    const refused = (text: string) => {
      try {
        parseJobFile(file(text), 'job.yaml');
      } catch (error) {
        expect(error).toBeInstanceOf(CliError);
        expect((error as CliError).exitCode).toBe(EXIT.USAGE);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused('checkpoint:\n  intervalSeconds: 0\n')).toMatch(
      /job\.yaml:6: checkpoint\.intervalSeconds: /,
    );
    expect(refused('checkpoint:\n  intervalSeconds: 1.5\n')).toMatch(/checkpoint\.intervalSeconds/);
    expect(refused('checkpoint:\n  intervalSeconds: 8000000\n')).toMatch(/at most 90 days/);
    expect(refused('checkpoint:\n  every: 5\n')).toMatch(/job\.yaml:6: checkpoint\.every: unknown field/);
  });
});
