import { z } from 'zod';
import { millis, section } from '../section.js';

export interface KubernetesConfig {
  /** FAIRWAY_KUBECONFIG; unset: in-cluster (service account), else $KUBECONFIG or ~/.kube/config. */
  kubeconfigPath?: string;
  /** FAIRWAY_KUBERNETES_SETTINGS: a YAML file of the backend's settings (flavor mapping, labels…), read when
   * the backend starts.
   */
  settingsFile?: string;
  /** How long start-up waits for the first list of Jobs, Pods and Nodes before it gives up. */
  startupTimeoutMs: number;
}

export interface BackendConfig {
  /** Where admitted jobs run. */
  kind: 'simulated' | 'kubernetes';
  /** Simulated cluster speed: 60 = a declared hour runs in one minute. */
  simulatedTimeScale: number;
  /** The Kubernetes backend's settings (used when `kind` is kubernetes). */
  kubernetes: KubernetesConfig;
}

export const backendSection = section({
  key: 'backend',
  title: 'Execution backend: the simulated cluster or Kubernetes',
  description:
    'Where admitted jobs run. The Kubernetes client also reads the standard `KUBECONFIG` (when `FAIRWAY_KUBECONFIG` is unset outside a cluster) and `KUBERNETES_SERVICE_HOST` (set by Kubernetes in a pod).',
  variables: {
    FAIRWAY_BACKEND: z
      .enum(['simulated', 'kubernetes'])
      .default('simulated')
      .describe(
        '`simulated` (the embedded cluster) or `kubernetes` (one namespace per tenant, jobs as `batch/v1` Jobs).',
      ),
    FAIRWAY_SIM_TIME_SCALE: z.coerce
      .number()
      .positive('must be a positive number')
      .max(1_000_000)
      .default(60)
      .describe('Simulated cluster speed: `60` runs a declared hour in a minute.'),
    FAIRWAY_KUBECONFIG: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Kubernetes backend: a kubeconfig file. Unset: the pod's service account in a cluster, else `$KUBECONFIG` or `~/.kube/config`.",
      )
      .meta({ typeText: 'file path' }),
    FAIRWAY_KUBERNETES_SETTINGS: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Kubernetes backend: a YAML file of its settings (flavor mapping, labels, timings), read when the backend starts.',
      )
      .meta({ typeText: 'file path', defaultText: 'unset (built-in settings)' }),
    FAIRWAY_KUBERNETES_STARTUP_TIMEOUT_MS: millis(1000, 600_000)
      .default(30_000)
      .describe(
        'Kubernetes backend: milliseconds start-up waits for the first list of Jobs, Pods and Nodes before it gives up.',
      ),
  },
  resolve: (v): BackendConfig => ({
    kind: v.FAIRWAY_BACKEND,
    simulatedTimeScale: v.FAIRWAY_SIM_TIME_SCALE,
    kubernetes: {
      kubeconfigPath: v.FAIRWAY_KUBECONFIG,
      settingsFile: v.FAIRWAY_KUBERNETES_SETTINGS,
      startupTimeoutMs: v.FAIRWAY_KUBERNETES_STARTUP_TIMEOUT_MS,
    },
  }),
});
