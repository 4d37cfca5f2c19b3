/**
 * Readiness as the kubelet's prober reports it: a running container without a readinessProbe is ready at
 * once; one with a probe when the probe first passes, the probes running every periodSeconds (default 10)
 * from the start, the first to count at least initialDelaySeconds after it, successThreshold in a row (the
 * test workload always answers them). A pod is Ready (conditions ContainersReady and Ready, reason
 * ContainersNotReady otherwise) when all its containers are; a test can hold one not ready (setPodReady).
 */
import { setCondition } from './cluster.js';

/** When a container started at `startedAt` (ms) is first ready. */
export function containerReadyAt(container: any, startedAt: number): number {
  const probe = container?.readinessProbe;
  if (!probe) return startedAt;
  const period = Math.max(1, probe.periodSeconds ?? 10) * 1000;
  const delay = Math.max(0, probe.initialDelaySeconds ?? 0) * 1000;
  const first = Math.ceil(delay / period) * period;
  return startedAt + first + (Math.max(1, probe.successThreshold ?? 1) - 1) * period;
}

/**
 * Sets containerStatuses[].ready and the ContainersReady / Ready conditions of a running pod's `status`
 * (in place). `due(at)`: whether `at` has come (else the caller wakes then); `held`: kept not ready.
 */
export function applyReadiness(
  pod: any,
  status: any,
  startedAt: number,
  held: boolean,
  due: (at: number) => boolean,
  now: number,
): void {
  const containers: any[] = pod.spec?.containers ?? [];
  const unready: string[] = [];
  status.containerStatuses = (status.containerStatuses ?? []).map((cs: any) => {
    const container = containers.find((c) => c.name === cs.name);
    const running = cs.state?.running !== undefined;
    const ready = running && !held && due(containerReadyAt(container, startedAt));
    if (!ready) unready.push(cs.name);
    return { ...cs, ready };
  });
  if (unready.length === 0) {
    for (const type of ['ContainersReady', 'Ready']) setCondition(status, type, 'True', '', '', now);
    return;
  }
  const message = `containers with unready status: [${unready.join(' ')}]`;
  for (const type of ['ContainersReady', 'Ready'])
    setCondition(status, type, 'False', 'ContainersNotReady', message, now);
}
