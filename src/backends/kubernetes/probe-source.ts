// The backend's GPU probe source: Prometheus (DCGM exporter metrics), when the settings name one.
// A series is mapped to a job through its pod: the pod informer's copy (Fairway's labels: job id and
// pod set, on the pods of every workload kind, whatever their controller names them), or for a pod
// not in the cache yet, its batch Job's pod name (naming.ts). Only within that job's tenant's
// namespace: a pod named or labelled after another tenant's job is never mapped to it.
import type { V1Pod } from '@kubernetes/client-node';
import type { BackendEvent, BackendJob } from '../port.js';
import { type PodOwner, PrometheusProbes, podOfName } from '../prometheus/index.js';
import { LABEL_JOB_ID, LABEL_POD_SET, labelValue } from './naming.js';
import type { KubernetesSettings } from './settings.js';

/** What the probe source needs of a run the backend answers for (a batch Job's or a custom workload's). */
export interface ProbedRun {
  job: BackendJob;
  namespace: string;
  started: boolean;
}

export interface ProbeSourceDeps {
  /** Every run the backend answers for, by Fairway job id. */
  runs(): Iterable<[string, ProbedRun]>;
  run(jobId: string): ProbedRun | undefined;
  /** The managed pod of that name, from the pod informer's cache. */
  pod(namespace: string, name: string): V1Pod | undefined;
  emit(event: BackendEvent): void;
  now(): number;
  log(message: string): void;
  fetch?: typeof fetch;
}

/** Whose the pod is, by the cache's labels or its batch pod name; null when not a started run's here. */
export function podOwner(
  deps: Pick<ProbeSourceDeps, 'run' | 'pod'>,
  namespace: string,
  pod: string,
): PodOwner {
  const cached = deps.pod(namespace, pod)?.metadata?.labels;
  const named = cached ? null : podOfName(pod);
  const jobId = cached ? cached[LABEL_JOB_ID] : named?.jobId;
  const run = jobId ? deps.run(jobId) : undefined;
  if (!jobId || !run?.started || run.namespace !== namespace) return null;
  const label = cached?.[LABEL_POD_SET];
  const podSet = named
    ? run.job.podSets[named.podSet]
    : run.job.podSets.find((p) => labelValue(p.name) === label);
  return podSet ? { jobId, gpus: podSet.perPod.gpu ?? 0 } : null;
}

/** The Prometheus poller for the backend's runs, or null without a Prometheus URL. */
export function probeSource(settings: KubernetesSettings, deps: ProbeSourceDeps): PrometheusProbes | null {
  const { prometheusUrl } = settings.probes ?? {};
  if (!prometheusUrl) return null;
  return new PrometheusProbes(
    { ...settings.probes, prometheusUrl },
    {
      namespacePrefix: settings.namespacePrefix,
      owner: (namespace, pod) => podOwner(deps, namespace, pod),
      emit: deps.emit,
      now: deps.now,
      log: deps.log,
      fetch: deps.fetch,
      runningGpuJobs: () =>
        [...deps.runs()]
          .filter(([, t]) => t.started && t.job.podSets.some((p) => (p.perPod.gpu ?? 0) > 0))
          .map(([jobId]) => jobId),
    },
  );
}
