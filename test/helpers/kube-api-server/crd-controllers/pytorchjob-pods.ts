/**
 * What the PyTorchJob controller (pytorchjob.ts) builds: the operator's in-memory defaults, the env it
 * gives every container, its pods and per-pod headless Services, and its condition bookkeeping.
 */
import { kubeTime } from '../store.js';
import { conditionTrue, ownerReference } from './common.js';

export const LABEL = 'training.kubeflow.org/';

/** The operator's in-memory defaults (SetDefaults_PyTorchJob). */
export function defaulted(job: any): any {
  const d = structuredClone(job);
  const spec = (d.spec ??= {});
  const runPolicy = (spec.runPolicy ??= {});
  runPolicy.cleanPodPolicy ??= 'None';
  for (const rspec of Object.values<any>(spec.pytorchReplicaSpecs ?? {})) {
    rspec.replicas ??= 1;
    rspec.restartPolicy ||= 'OnFailure';
    const containers: any[] = rspec.template?.spec?.containers ?? [];
    const main = containers.find((c) => c.name === 'pytorch') ?? containers[0];
    if (main && !(main.ports ?? []).some((p: any) => p.name === 'pytorchjob-port'))
      main.ports = [...(main.ports ?? []), { name: 'pytorchjob-port', containerPort: 23456 }];
  }
  const elastic = spec.elasticPolicy;
  if (elastic) {
    const workers = spec.pytorchReplicaSpecs?.Worker?.replicas;
    elastic.minReplicas ??= elastic.maxReplicas ?? workers;
    elastic.maxReplicas ??= elastic.minReplicas ?? workers;
  }
  if (!elastic || elastic.nProcPerNode === undefined) spec.nprocPerNode ??= 'auto';
  return d;
}

const portOf = (job: any, type: string): number | undefined =>
  (job.spec.pytorchReplicaSpecs[type]?.template?.spec?.containers ?? [])
    .find((c: any) => c.name === 'pytorch')
    ?.ports?.find((p: any) => p.name === 'pytorchjob-port')?.containerPort;

/** setPodEnv: what every container of a replica's pod is told. */
function podEnv(job: any, type: string, index: number): { name: string; value: string }[] {
  const specs = job.spec.pytorchReplicaSpecs;
  const total = Object.values<any>(specs).reduce((n, r) => n + r.replicas, 0);
  const nproc = Number.parseInt(job.spec.nprocPerNode ?? '', 10);
  const env = [{ name: 'PYTHONUNBUFFERED', value: '1' }];
  if (specs.Master) {
    const port = String(portOf(job, 'Master') ?? -1);
    const addr = `${job.metadata.name}-master-0`;
    const rank = String(type === 'Worker' ? index + 1 : index);
    env.push(
      { name: 'MASTER_PORT', value: port },
      { name: 'PET_MASTER_PORT', value: port },
      { name: 'MASTER_ADDR', value: addr },
      { name: 'PET_MASTER_ADDR', value: addr },
      { name: 'WORLD_SIZE', value: String(total * (Number.isNaN(nproc) ? 1 : nproc)) },
      { name: 'RANK', value: rank },
      { name: 'PET_NODE_RANK', value: rank },
    );
  }
  if (job.spec.nprocPerNode !== undefined)
    env.push({ name: 'PET_NPROC_PER_NODE', value: String(job.spec.nprocPerNode) });
  const elastic = job.spec.elasticPolicy;
  if (!elastic) env.push({ name: 'PET_NNODES', value: String(total) });
  else {
    const host = elastic.rdzvHost ?? `${job.metadata.name}-worker-0`;
    env.push(
      { name: 'PET_RDZV_ENDPOINT', value: `${host}:${elastic.rdzvPort ?? portOf(job, 'Worker') ?? -1}` },
      { name: 'PET_RDZV_BACKEND', value: elastic.rdzvBackend ?? 'c10d' },
      { name: 'PET_NNODES', value: `${elastic.minReplicas}:${elastic.maxReplicas}` },
    );
    if (elastic.maxRestarts !== undefined)
      env.push({ name: 'PET_MAX_RESTARTS', value: String(elastic.maxRestarts) });
    if (elastic.nProcPerNode !== undefined)
      env.push({ name: 'PET_NPROC_PER_NODE', value: String(elastic.nProcPerNode) });
    if (elastic.rdzvId !== undefined) env.push({ name: 'PET_RDZV_ID', value: elastic.rdzvId });
    if (elastic.rdzvConf?.length)
      env.push({
        name: 'PET_RDZV_CONF',
        value: elastic.rdzvConf.map((c: any) => `${c.key}=${c.value}`).join(','),
      });
    if (elastic.standalone) env.push({ name: 'PET_STANDALONE', value: '' });
  }
  return env;
}

/** UpdateJobConditions / setCondition of the operator: no change once Failed; Running and Restarting exclude each other. */
export function setCondition(
  status: any,
  type: string,
  value: 'True' | 'False',
  reason: string,
  message: string,
  now: number,
): void {
  if (conditionTrue(status, 'Failed')) return;
  const conditions: any[] = status.conditions ?? [];
  const current = conditions.find((c) => c.type === type);
  if (current && current.status === value && current.reason === reason) return;
  const at = kubeTime(now);
  const next = {
    type,
    status: value,
    reason,
    message,
    lastUpdateTime: at,
    lastTransitionTime: current?.status === value ? current.lastTransitionTime : at,
  };
  const kept = conditions
    .filter(
      (c) =>
        c.type !== type &&
        !(type === 'Restarting' && c.type === 'Running') &&
        !(type === 'Running' && c.type === 'Restarting'),
    )
    .map((c) =>
      (type === 'Failed' || type === 'Succeeded') && c.type === 'Running' ? { ...c, status: 'False' } : c,
    );
  status.conditions = [...kept, next];
}

export const exitCodeOf = (pod: any): number | undefined =>
  (pod.status?.containerStatuses ?? []).find((s: any) => s.name === 'pytorch' && s.state?.terminated)?.state
    .terminated.exitCode;

export function replicaLabels(job: any, rt: string): Record<string, string> {
  return {
    [`${LABEL}operator-name`]: 'pytorchjob-controller',
    [`${LABEL}job-name`]: job.metadata.name.replace(/\//g, '-'),
    [`${LABEL}replica-type`]: rt,
  };
}

/** The operator's default init container template (initcontainer.go): no securityContext. */
const INIT_CONTAINER = {
  name: 'init-pytorch',
  image: '{{.InitContainerImage}}',
  imagePullPolicy: 'IfNotPresent',
  resources: { limits: { cpu: '100m', memory: '20Mi' }, requests: { cpu: '50m', memory: '10Mi' } },
  command: [
    'sh',
    '-c',
    'err=1;for i in $(seq {{.MaxTries}}); do if nslookup {{.MasterAddr}}; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err',
  ],
};

/**
 * createNewPod: the pod of one replica (`warn`: the pod template's own restartPolicy is overridden;
 * `initContainerTemplate`: the operator's --pytorch-init-container-template-file, default its own).
 */
export function podFor(
  stored: any,
  job: any,
  type: string,
  index: number,
  warn: () => void,
  initContainerTemplate?: object,
): any {
  const rspec = job.spec.pytorchReplicaSpecs[type];
  const rt = type.toLowerCase();
  const template = structuredClone(rspec.template ?? {});
  const labels: Record<string, string> = {
    ...replicaLabels(job, rt),
    [`${LABEL}replica-index`]: String(index),
  };
  const master = job.spec.pytorchReplicaSpecs.Master ? type === 'Master' : type === 'Worker' && index === 0;
  if (master) labels[`${LABEL}job-role`] = 'master';
  const spec = template.spec ?? {};
  const env = podEnv(job, type, index);
  for (const c of spec.containers ?? []) c.env = [...(c.env ?? []), ...env];
  if (job.spec.pytorchReplicaSpecs.Master && type === 'Worker') {
    const addr = `${job.metadata.name}-master-0`;
    const values: Record<string, string> = {
      MasterAddr: addr,
      InitContainerImage: 'alpine:3.10',
      MaxTries: '100',
    };
    const text = JSON.stringify(initContainerTemplate ?? INIT_CONTAINER).replace(
      /\{\{\s*\.(\w+)\s*\}\}/g,
      (whole, key: string) => values[key] ?? whole,
    );
    spec.initContainers = [...(spec.initContainers ?? []), JSON.parse(text)];
  }
  if (template.spec?.restartPolicy) warn();
  spec.restartPolicy = rspec.restartPolicy === 'ExitCode' ? 'Never' : rspec.restartPolicy;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...template.metadata,
      name: `${job.metadata.name}-${rt}-${index}`,
      namespace: job.metadata.namespace,
      labels: { ...template.metadata?.labels, ...labels },
      ownerReferences: [ownerReference(stored)],
    },
    spec,
  };
}

/** CreateNewService: the headless Service of one replica, named like its pod. */
export function serviceFor(stored: any, job: any, type: string, index: number): any {
  const rt = type.toLowerCase();
  const labels = { ...replicaLabels(job, rt), [`${LABEL}replica-index`]: String(index) };
  const container = (job.spec.pytorchReplicaSpecs[type].template?.spec?.containers ?? []).find(
    (c: any) => c.name === 'pytorch',
  );
  const ports = (container?.ports ?? []).map((p: any) => ({ name: p.name, port: p.containerPort }));
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: `${job.metadata.name}-${rt}-${index}`,
      namespace: job.metadata.namespace,
      labels,
      ownerReferences: [ownerReference(stored)],
    },
    spec: { clusterIP: 'None', selector: labels, ports },
  };
}
