// The backend's GPU probe source: Prometheus (DCGM exporter metrics), when the settings name one.
// A series is mapped to a job by its pod's name (naming.ts), and only within that job's tenant's
// namespace: a pod named after another tenant's job is never mapped to it.
import type { BackendEvent } from '../port.js';
import { type PodOwner, PrometheusProbes, podOfName } from '../prometheus/index.js';
import type { TrackedRun } from './run-tracking.js';
import type { KubernetesSettings } from './settings.js';

export interface ProbeSourceDeps {
  tracked: ReadonlyMap<string, TrackedRun>;
  emit(event: BackendEvent): void;
  now(): number;
  log(message: string): void;
  fetch?: typeof fetch;
}

/** The Prometheus poller for the tracked runs, or null without a Prometheus URL. */
export function probeSource(settings: KubernetesSettings, deps: ProbeSourceDeps): PrometheusProbes | null {
  const { prometheusUrl } = settings.probes ?? {};
  if (!prometheusUrl) return null;
  const owner = (namespace: string, pod: string): PodOwner => {
    const named = podOfName(pod);
    const t = named && deps.tracked.get(named.jobId);
    if (!named || !t?.started || t.namespace !== namespace) return null;
    const podSet = t.job.podSets[named.podSet];
    return podSet ? { jobId: named.jobId, gpus: podSet.perPod.gpu ?? 0 } : null;
  };
  return new PrometheusProbes(
    { ...settings.probes, prometheusUrl },
    {
      namespacePrefix: settings.namespacePrefix,
      owner,
      emit: deps.emit,
      now: deps.now,
      log: deps.log,
      fetch: deps.fetch,
      runningGpuJobs: () =>
        [...deps.tracked]
          .filter(([, t]) => t.started && t.job.podSets.some((p) => (p.perPod.gpu ?? 0) > 0))
          .map(([jobId]) => jobId),
    },
  );
}
