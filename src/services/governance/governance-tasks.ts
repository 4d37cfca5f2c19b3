// The governance loops the scheduling leader runs, each a LeaderTask in its own module.
// buildApp passes this list to the SchedulerService; settings come from the server's configuration.

import type { ExecutionBackend } from '../../backends/port.js';
import type { LeaderTask } from '../scheduling/index.js';
import { type ControllerTaskOptions, controllerTask } from './controller-task.js';
import { DEFAULT_IDLE_CHECK_INTERVAL_MS, idleReclaimTask } from './idle-reclaim.js';
import { type ProbeSettings, probeLeaderTasks } from './probes.js';
import { quotaRequestTask } from './quota-expiry.js';

export interface GovernanceTaskSettings {
  /** The leader's clock (for tests that move time). */
  now: () => number;
  /** Runtime probes: the sample interval, retention, and polling of a backend's metrics source (probes.ts;
   * FAIRWAY_PROBE_*).
   */
  probes?: ProbeSettings;
  /** The execution backend (a Kubernetes backend with a Prometheus source is polled by the leader). */
  backend?: ExecutionBackend;
  /** Quota requests: how often the leader activates and expires them (FAIRWAY_QUOTA_REQUEST_INTERVAL_MS;
   * default 30 s).
   */
  quotaRequestIntervalMs?: number;
  /** Idle and held reclaim: how often the leader checks admitted jobs of governed queues
   * (FAIRWAY_IDLE_CHECK_INTERVAL_MS; default 60 s; 0: off).
   */
  idleCheckIntervalMs?: number;
  /** The second-level controller: its default window (FAIRWAY_CONTROLLER_WINDOW_MS), sampling period and
   * rule numbers (controller-task.ts).
   */
  controller?: ControllerTaskOptions;
}

/** Every governance task, in the order they are registered (each runs on its own period). */
export function governanceLeaderTasks(settings: GovernanceTaskSettings): LeaderTask[] {
  void settings;
  const tasks: LeaderTask[] = [];
  // governance tasks register here, one line each
  tasks.push(controllerTask(settings.controller));
  if (settings.idleCheckIntervalMs !== 0)
    tasks.push(idleReclaimTask({ everyMs: settings.idleCheckIntervalMs ?? DEFAULT_IDLE_CHECK_INTERVAL_MS }));
  tasks.push(...probeLeaderTasks({ ...settings.probes, backend: settings.backend }).tasks);
  tasks.push(quotaRequestTask(settings));
  return tasks;
}
