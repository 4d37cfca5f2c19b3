// The report as the JSON file holds it (what terminal, HTML and Markdown render), and its serialisation.
import { createHash } from 'node:crypto';
import type { FillOutcome } from './engine.js';
import type { ReplayMetrics } from './metrics.js';

export interface ReportInputs {
  trace: string;
  cluster: string;
  queues: string;
  jobs: number;
  capacityGpus: number;
  nodes: number;
}

export interface ReplayReport {
  format: 'fairway-simulation/1';
  mode: 'replay';
  inputs: ReportInputs;
  slaSeconds: number;
  windowEnd: string;
  runs: ReplayMetrics[];
}

export interface FillRun {
  policy: string;
  placement: string;
  seed: number;
  capacityGpus: number;
  jobsDrawn: number;
  sampleSha256: string;
  points: FillOutcome['points'];
}

export interface FillReport {
  format: 'fairway-simulation/1';
  mode: 'fill';
  inputs: ReportInputs;
  seed: number;
  runs: FillRun[];
}

export type Report = ReplayReport | FillReport;

export function fillRun(o: FillOutcome): FillRun {
  return {
    policy: o.policy,
    placement: o.placement,
    seed: o.seed,
    capacityGpus: o.capacityGpus,
    jobsDrawn: o.sample.length,
    sampleSha256: createHash('sha256').update(o.sample.join(',')).digest('hex'),
    points: o.points,
  };
}

/** Deterministic JSON: objects are built in a fixed key order; no times of the run inside. */
export function reportJson(r: Report): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}
