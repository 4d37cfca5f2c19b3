/**
 * What the test cluster's control loops (workload controllers, scheduler, kubelet, pod GC) share: the
 * store, the event recorder, the options, a way to write that reports refusals, and the loop's clock.
 */
import type { EventRecorder } from './events.js';
import type { PodLogs } from './pod-logs.js';
import { kubeTime, type Store } from './store.js';

export interface KubeletOptions {
  /** Pod Pending → Running this long after it is bound to a node. Default 20. */
  startDelayMs?: number;
  /** How long a pod without the `fairway.dev/test-run-ms` annotation runs; default: until deleted. */
  defaultRunMs?: number;
  /** A container whose command is `sleep N` runs N seconds (Fairway's placeholder for jobs without a container). */
  sleepCommands?: boolean;
}

/** How the scheduler picks among the nodes a pod fits: by name, or scored as kube-scheduler's NodeResourcesFit. */
export type Scoring = 'first-fit' | 'least-allocated' | 'most-allocated';

export interface ClusterOptions {
  kubelet: (Required<Pick<KubeletOptions, 'startDelayMs'>> & KubeletOptions) | false;
  scoring: Scoring;
  /** The scheduler preempts lower-priority pods for a pod that fits nowhere. */
  preemption: boolean;
  /** How long after a suspended Job's pods are gone the Job controller clears status.startTime. */
  jobControllerDelayMs: number;
  /** How often the HorizontalPodAutoscaler controller syncs each HPA. */
  hpaSyncMs: number;
  /** The PyTorchJob workers' init container template (KubeApiServerOptions.pytorchInitContainerTemplate). */
  pytorchInitContainerTemplate?: object;
}

/** How long the workload runs (ms), from the annotation or the first container's FAIRWAY_TEST_RUN_MS. */
export const ANNOTATION_RUN_MS = 'fairway.dev/test-run-ms';
/** How the workload ends: `fail` (exit 1), `oom` (OOMKilled, 137), `success` (exit 0, even on SIGTERM). */
export const ANNOTATION_OUTCOME = 'fairway.dev/test-outcome';
/** How long the workload takes to exit after SIGTERM (ms, default 0); past the grace period it is killed. */
export const ANNOTATION_SIGTERM_MS = 'fairway.dev/test-sigterm-ms';

export interface Cluster {
  readonly store: Store;
  readonly events: EventRecorder;
  /** The containers' logs (the kubelet writes them). */
  readonly logs: PodLogs;
  readonly options: ClusterOptions;
  /** Runs a write; a refusal is reported once in `problems` and answers undefined. */
  write<T>(action: () => T): T | undefined;
  problem(message: string): void;
  /** Whether `at` has come; if not, the loop runs again then. */
  due(at: number, now: number): boolean;
}

export const hasCondition = (obj: any, type: string) =>
  (obj.status?.conditions ?? []).some((c: any) => c.type === type && c.status === 'True');

/** Sets a condition, keeping lastTransitionTime when nothing about it changed (so reconciling twice writes
 * nothing).
 */
export function setCondition(
  status: any,
  type: string,
  value: 'True' | 'False',
  reason: string,
  message: string,
  now = Date.now(),
): void {
  const conditions: any[] = (status.conditions ??= []);
  const existing = conditions.find((c) => c.type === type);
  if (
    existing &&
    existing.status === value &&
    (existing.reason ?? '') === reason &&
    (existing.message ?? '') === message
  )
    return;
  const condition = {
    type,
    status: value,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
    ...(existing?.lastProbeTime !== undefined ? { lastProbeTime: existing.lastProbeTime } : {}),
    lastTransitionTime: existing?.status === value ? existing.lastTransitionTime : kubeTime(now),
  };
  if (existing) conditions[conditions.indexOf(existing)] = condition;
  else conditions.push(condition);
}

/** What the workload of a pod is told: its pod annotation, or (as a program reads its environment) the first
 * container's variable.
 */
export function workloadSetting(pod: any, annotation: string, env: string): string | undefined {
  const fromEnv = pod.spec?.containers?.[0]?.env?.find((e: { name: string }) => e.name === env)?.value;
  return pod.metadata?.annotations?.[annotation] ?? fromEnv;
}

/** The list under `key`, made empty when absent. */
export function listIn<T>(map: Map<string, T[]>, key: string): T[] {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  return list;
}

export const controllerOf = (pod: any, kind = 'Job') =>
  (pod.metadata?.ownerReferences ?? []).find((r: any) => r.kind === kind && r.controller);
