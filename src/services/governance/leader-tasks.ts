// The governance loops the scheduling leader runs (issue 16), each a LeaderTask in its own module.
// buildApp passes this list to the SchedulerService; settings come from the server's configuration.
import type { LeaderTask } from '../scheduling/leader-session.js';

export interface GovernanceTaskSettings {
  /** The leader's clock (for tests that move time). */
  now: () => number;
}

/** Every governance task, in the order they are registered (each runs on its own period). */
export function governanceLeaderTasks(settings: GovernanceTaskSettings): LeaderTask[] {
  void settings;
  const tasks: LeaderTask[] = [];
  // governance tasks register here, one line each
  return tasks;
}
