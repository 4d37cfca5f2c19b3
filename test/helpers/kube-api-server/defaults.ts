/**
 * Defaulting as the real API server does it on every write (SetDefaults_* of k8s.io/kubernetes
 * pkg/apis/{core,batch}/v1), plus what a kind's strategy sets on create: a Job's generated
 * selector and the controller-uid / job-name labels on its template, a Service's cluster IP,
 * a Pod's initial status (phase Pending, qosClass).
 */

const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export const JOB_NAME_LABELS = ['job-name', 'batch.kubernetes.io/job-name'];
export const CONTROLLER_UID_LABELS = ['controller-uid', 'batch.kubernetes.io/controller-uid'];

function containerDefaults(c: any): void {
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  if (c.imagePullPolicy === undefined && typeof c.image === 'string') {
    const last = c.image.split('/').pop() ?? '';
    const tag = last.includes('@') ? 'digest' : last.includes(':') ? last.split(':').pop() : 'latest';
    c.imagePullPolicy = tag === 'latest' ? 'Always' : 'IfNotPresent';
  }
  c.resources ??= {};
  for (const p of c.ports ?? []) p.protocol ??= 'TCP';
  for (const e of c.env ?? []) if (e.valueFrom?.fieldRef) e.valueFrom.fieldRef.apiVersion ??= 'v1';
  for (const key of ['livenessProbe', 'readinessProbe', 'startupProbe']) probeDefaults(c[key]);
}

/** SetDefaults_Probe and SetDefaults_HTTPGetAction. */
function probeDefaults(probe: any): void {
  if (!isObject(probe)) return;
  probe.timeoutSeconds ??= 1;
  probe.periodSeconds ??= 10;
  probe.successThreshold ??= 1;
  probe.failureThreshold ??= 3;
  if (isObject(probe.httpGet)) {
    probe.httpGet.path ??= '/';
    probe.httpGet.scheme ??= 'HTTP';
  }
}

/** SetDefaults_PodSpec: for pods and for the pod templates of Jobs alike. */
export function podSpecDefaults(spec: any): void {
  if (!isObject(spec)) return;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.schedulerName ??= 'default-scheduler';
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  for (const list of ['initContainers', 'containers', 'ephemeralContainers'])
    for (const c of spec[list] ?? []) containerDefaults(c);
}

/** SetDefaults_Pod: a container's request defaults to its limit, resource by resource. */
function podDefaults(pod: any): void {
  podSpecDefaults(pod.spec);
  for (const list of ['initContainers', 'containers'])
    for (const c of pod.spec?.[list] ?? []) {
      const limits = c.resources?.limits;
      if (!isObject(limits) || Object.keys(limits).length === 0) continue;
      c.resources.requests ??= {};
      for (const [resource, amount] of Object.entries(limits)) c.resources.requests[resource] ??= amount;
    }
}

/** SetDefaults_Job. */
function jobDefaults(job: any): void {
  const spec = (job.spec ??= {});
  if (spec.completions === undefined && spec.parallelism === undefined) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  spec.parallelism ??= 1;
  spec.backoffLimit ??= spec.backoffLimitPerIndex !== undefined ? 2147483647 : 6;
  const templateLabels = spec.template?.metadata?.labels;
  if (isObject(templateLabels) && Object.keys(job.metadata?.labels ?? {}).length === 0)
    job.metadata.labels = { ...templateLabels };
  spec.completionMode ??= 'NonIndexed';
  spec.suspend ??= false;
  for (const rule of spec.podFailurePolicy?.rules ?? [])
    for (const pattern of rule.onPodConditions ?? []) pattern.status ??= 'True';
  spec.podReplacementPolicy ??= spec.podFailurePolicy ? 'Failed' : 'TerminatingOrFailed';
  podSpecDefaults(spec.template?.spec);
}

function serviceDefaults(service: any, allocateIp: () => string, creating: boolean): void {
  const spec = (service.spec ??= {});
  spec.type ??= 'ClusterIP';
  spec.sessionAffinity ??= 'None';
  for (const p of spec.ports ?? []) {
    p.protocol ??= 'TCP';
    p.targetPort ??= p.port;
  }
  if (spec.type !== 'ExternalName') {
    if (creating && spec.clusterIP === undefined) spec.clusterIP = allocateIp();
    if (spec.clusterIP !== undefined) spec.clusterIPs ??= [spec.clusterIP];
    spec.ipFamilies ??= ['IPv4'];
    spec.ipFamilyPolicy ??= 'SingleStack';
    spec.internalTrafficPolicy ??= 'Cluster';
  }
  service.status ??= { loadBalancer: {} };
}

/** The generated selector (`batch.kubernetes.io/controller-uid`) and the labels it selects, on create. */
function generateJobSelector(job: any): void {
  const template = (job.spec.template ??= {});
  const labels = ((template.metadata ??= {}).labels ??= {});
  for (const key of JOB_NAME_LABELS) labels[key] ??= job.metadata.name;
  for (const key of CONTROLLER_UID_LABELS) labels[key] ??= job.metadata.uid;
  const selector = (job.spec.selector ??= {});
  const matchLabels = (selector.matchLabels ??= {});
  matchLabels['batch.kubernetes.io/controller-uid'] ??= job.metadata.uid;
}

/** The QoS class of a pod (cpu and memory only), as the API server sets it on create. */
export function qosClass(pod: any): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const containers: any[] = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    for (const r of ['cpu', 'memory']) {
      const request = c.resources?.requests?.[r];
      const limit = c.resources?.limits?.[r];
      if (request !== undefined || limit !== undefined) any = true;
      if (limit === undefined || (request !== undefined && String(request) !== String(limit)))
        guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

export interface DefaultContext {
  creating: boolean;
  allocateIp: () => string;
}

/** Applies the defaults of `obj`'s kind in place (metadata.uid and name must be set already). */
export function applyDefaults(obj: any, ctx: DefaultContext): void {
  switch (obj.kind) {
    case 'Pod':
      podDefaults(obj);
      break;
    case 'Job':
      jobDefaults(obj);
      if (ctx.creating && obj.spec.manualSelector !== true) generateJobSelector(obj);
      break;
    case 'Service':
      serviceDefaults(obj, ctx.allocateIp, ctx.creating);
      break;
  }
}

/** A Pod's status as a create leaves it: what a client sent is dropped, phase Pending and the QoS class. */
export function initialPodStatus(pod: any, keep: boolean): void {
  const status = keep && isObject(pod.status) ? pod.status : {};
  status.phase ??= 'Pending';
  status.qosClass ??= qosClass(pod);
  pod.status = status;
}
