// What a KubernetesBackend is made with (backend.ts): the cluster, the settings, and the knobs tests
// and the gateway turn.
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeClientOptions } from './client.js';
import type { KubeLogOptions } from './pod-logs.js';
import type { KubernetesSettings } from './settings.js';

export interface KubernetesBackendOptions extends KubeLogOptions {
  kubeConfig: KubeConfig;
  settings: KubernetesSettings;
  now?: () => number;
  logError?: (error: unknown) => void;
  log?: (message: string) => void;
  /** How often every tracked job is evaluated again from the caches (missed events). Default 30 s. */
  resyncMs?: number;
  /** How often admitted jobs are checked against `notRunningAfterMs`. Default 5 s. */
  checkIntervalMs?: number;
  client?: KubeClientOptions;
  /** How the Prometheus probe source fetches (tests). Default: the global fetch. */
  fetch?: typeof fetch;
}
