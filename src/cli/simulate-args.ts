// `fairway simulate`'s options: its flags (src/cli/fairway.ts runs it) → the simulator's options
// plus where and how to report.
import type { SimulateOptions } from '../simulator/run.js';
import {
  ALL_POLICIES,
  PLACEMENTS,
  type PlacementName,
  POLICIES,
  type PolicyName,
} from '../simulator/scheduling-policies.js';
import { int, list, parseFlags, str, UsageError } from './fairway-flags.js';

const SIM_STRINGS = [
  'trace',
  'cluster',
  'queues',
  'policy',
  'placement',
  'mode',
  'seed',
  'fill-targets',
  'window',
  'sla-seconds',
  'out',
  'name',
  'idle-reclaim',
  'controller-window-min',
];
const SIM_BOOLEANS = ['no-preview', 'eta', 'no-tenants', 'quiet', 'help', 'probes'];
const SIM_KNOWN = [...SIM_STRINGS, ...SIM_BOOLEANS];

export type SimulateCommand = SimulateOptions & {
  out: string;
  name: string;
  tenants: boolean;
  quiet: boolean;
};

export function parseSimulateArgs(args: string[]): SimulateCommand | 'help' {
  const f = parseFlags(args, SIM_STRINGS, SIM_BOOLEANS);
  if (f.has('help')) return 'help';
  for (const k of f.keys()) if (!SIM_KNOWN.includes(k)) throw new UsageError(`unknown option --${k}`);
  const need = (k: string): string => {
    const v = str(f, k);
    if (v === undefined) throw new UsageError(`--${k} FILE is required`);
    return v;
  };
  const mode = str(f, 'mode') ?? 'replay';
  if (mode !== 'replay' && mode !== 'fill')
    throw new UsageError(`--mode must be replay or fill, got '${mode}'`);
  const win = str(f, 'window');
  if (win !== undefined && win !== 'last-submit' && win !== 'last-finish')
    throw new UsageError(`--window must be last-submit or last-finish`);
  const o: SimulateCommand = {
    trace: need('trace'),
    cluster: need('cluster'),
    queues: need('queues'),
    policies: list<PolicyName>(f, 'policy', ALL_POLICIES, [...POLICIES]),
    placements: list<PlacementName>(f, 'placement', PLACEMENTS, ['best-fit']),
    mode,
    seed: int(f, 'seed', 1),
    out: str(f, 'out') ?? 'sim-out',
    name: str(f, 'name') ?? 'report',
    tenants: !f.has('no-tenants'),
    quiet: f.has('quiet'),
  };
  if (win !== undefined) o.windowEnd = win;
  if (f.has('sla-seconds')) o.slaSeconds = int(f, 'sla-seconds', 60);
  if (f.has('no-preview')) o.preview = false;
  if (f.has('eta')) o.eta = true;
  if (f.has('probes')) o.probes = true;
  const idle = str(f, 'idle-reclaim');
  if (idle !== undefined && idle !== 'on' && idle !== 'off')
    throw new UsageError(`--idle-reclaim must be on or off, got '${idle}'`);
  if (idle === 'on') o.idleReclaim = true;
  if (f.has('controller-window-min')) {
    const m = int(f, 'controller-window-min', 5);
    if (m < 1) throw new UsageError(`--controller-window-min must be at least 1`);
    o.controllerWindowMs = m * 60_000;
  }
  const ft = str(f, 'fill-targets');
  if (ft !== undefined) {
    const xs = ft.split(',').map((s) => Number(s.trim()));
    if (xs.some((x) => !(x > 0) || !Number.isFinite(x)))
      throw new UsageError(`--fill-targets must be positive numbers, got '${ft}'`);
    o.fillTargets = xs;
  }
  if (!/^[\w.-]+$/.test(o.name))
    throw new UsageError(`--name may use letters, digits, '.', '_' and '-' only`);
  return o;
}
