import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import {
  DEFAULT_KUBERNETES_SETTINGS,
  KubernetesBackend,
  type KubernetesSettings,
  parseKubernetesSettings,
} from '../backends/kubernetes/index.js';
import type { ExecutionBackend } from '../backends/port.js';
import { SimulatedBackend } from '../backends/simulated/index.js';
import { ConfigError, type FairwayConfig } from '../config/index.js';

/**
 * The execution backend the configuration's backend section names: the simulated cluster, or
 * Kubernetes (its settings file read now, then started and synced). `probes`: the governance
 * section's, whose Prometheus URL wins over the settings file's.
 */
export async function backendFromConfig(
  config: FairwayConfig['backend'],
  probes: FairwayConfig['governance']['probes'],
  deps: { now: () => number; logError: (error: unknown) => void; logArchiveBytes?: number },
): Promise<ExecutionBackend> {
  if (config.kind === 'simulated')
    return new SimulatedBackend({
      timeScale: config.simulatedTimeScale,
      now: deps.now,
      logArchiveBytes: deps.logArchiveBytes,
    });
  const chosen = config.kubernetes;
  const fromFile = kubernetesSettings(chosen.settingsFile);
  // FAIRWAY_PROBES_PROMETHEUS_URL over the settings file's probes.prometheusUrl.
  const settings = probes.prometheusUrl
    ? { ...fromFile, probes: { ...fromFile.probes, prometheusUrl: probes.prometheusUrl } }
    : fromFile;
  const backend = KubernetesBackend.fromKubeconfig(chosen.kubeconfigPath, {
    settings,
    now: deps.now,
    logError: deps.logError,
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `the Kubernetes API did not answer within ${chosen.startupTimeoutMs} ms (list of Jobs, Pods and Nodes); check FAIRWAY_KUBECONFIG or the pod's service account and RBAC`,
          ),
        ),
      chosen.startupTimeoutMs,
    );
  });
  try {
    await Promise.race([backend.ready(), timeout]);
  } catch (error) {
    await backend.close();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return backend;
}

function kubernetesSettings(file: string | undefined): KubernetesSettings {
  if (!file) return DEFAULT_KUBERNETES_SETTINGS;
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError([
      `FAIRWAY_KUBERNETES_SETTINGS: cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`,
    ]);
  }
  try {
    return parseKubernetesSettings(raw ?? {});
  } catch (error) {
    throw new ConfigError([
      `FAIRWAY_KUBERNETES_SETTINGS (${file}): ${error instanceof Error ? error.message : String(error)}`,
    ]);
  }
}
