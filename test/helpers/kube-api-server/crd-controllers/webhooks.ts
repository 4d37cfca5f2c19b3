/**
 * The admission webhooks the workload controllers install beside their CRDs, as far as a test needs
 * them (called by the store for writes to the main resource, not /status):
 * - JobSet (mjobset.kb.io on create; vjobset.kb.io on create and update): defaults successPolicy
 *   {operator: All}, startupPolicy {startupPolicyOrder: AnyOrder}, each replicatedJob's completionMode
 *   Indexed and pod restartPolicy OnFailure, network.enableDNSHostnames / publishNotReadyAddresses true,
 *   failure policy rule names; refuses names whose Jobs or pods would exceed 63 characters, a bad
 *   subdomain, unknown success-policy targets, and updates of spec.replicatedJobs other than the pod
 *   templates' labels, annotations, nodeSelector, tolerations and schedulingGates while suspended (what
 *   Kueue changes), or of managedBy;
 * - PyTorchJob (validator.pytorchjob.training-operator.kubeflow.org): a DNS-1035 name, replica types
 *   Master / Worker only, a container named `pytorch` with an image in each, Master replicas set to 1,
 *   Workers ≥ 1, runPolicy.managedBy supported (its update check compares the new object with itself).
 */
import { dns1035LabelErrors, dns1123SubdomainErrors } from '../names.js';

export interface Webhook {
  /** The validating webhook's name, as a refusal names it. */
  name: string;
  /** Mutating admission (`old` undefined on create). */
  mutate?(obj: any, old?: any): void;
  /** Validating admission: the field errors, in the webhook's words. */
  validate?(obj: any, old?: any): string[];
  /**
   * How a refusal is answered: 'invalid' (the webhook returns an Invalid status: 422
   * `<Kind>.<group> "<name>" is invalid: …`) or 'denied' (a plain error: 403 with the errors joined).
   */
  refusal: 'invalid' | 'denied';
}

const quote = (v: unknown) => JSON.stringify(v);
const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

const jobSetWebhook: Webhook = {
  name: 'vjobset.kb.io',
  refusal: 'invalid',
  mutate(js, old) {
    if (old) return; // mjobset.kb.io runs on create only
    const spec = (js.spec ??= {});
    spec.successPolicy ??= { operator: 'All' };
    spec.startupPolicy ??= { startupPolicyOrder: 'AnyOrder' };
    for (const rjob of spec.replicatedJobs ?? []) {
      const jobSpec = ((rjob.template ??= {}).spec ??= {});
      jobSpec.completionMode ??= 'Indexed';
      const podSpec = ((jobSpec.template ??= {}).spec ??= {});
      if (!podSpec.restartPolicy) podSpec.restartPolicy = 'OnFailure';
    }
    const network = (spec.network ??= {});
    network.enableDNSHostnames ??= true;
    network.publishNotReadyAddresses ??= true;
    (spec.failurePolicy?.rules ?? []).forEach((rule: any, i: number) => {
      if (!rule.name) rule.name = `failurePolicyRule${i}`;
    });
  },
  validate(js, old) {
    const out: string[] = [];
    const spec = js.spec ?? {};
    const name: string = js.metadata?.name ?? '';
    if (!old) {
      const subdomain = spec.network?.subdomain;
      if (subdomain) {
        for (const e of [...dns1123SubdomainErrors(subdomain), ...dns1035LabelErrors(subdomain)])
          out.push(
            `spec.network.subdomain: Invalid value: ${quote(subdomain)}: ${e === 'must be no more than 63 characters' ? '.spec.network.subdomain is too long, must be less than 63 characters' : e}`,
          );
      }
      const names = new Set<string>();
      (spec.replicatedJobs ?? []).forEach((rjob: any, i: number) => {
        names.add(rjob.name);
        const longestJob = `${name}-${rjob.name}-${(rjob.replicas ?? 1) - 1}`;
        const tooLong = (what: string) =>
          `JobSet name is too long, ${what} names generated for this JobSet will exceed 63 characters`;
        for (const e of dns1035LabelErrors(longestJob))
          out.push(
            `spec.replicatedJobs[${i}].name: Invalid value: ${quote(longestJob)}: ${e === 'must be no more than 63 characters' ? tooLong('job') : e}`,
          );
        const jobSpec = rjob.template?.spec ?? {};
        if (jobSpec.completionMode === 'Indexed' && jobSpec.completions !== undefined) {
          const longestPod = `${longestJob}-${jobSpec.completions - 1}-abcde`;
          for (const e of dns1035LabelErrors(longestPod))
            out.push(
              `spec.replicatedJobs[${i}].name: Invalid value: ${quote(longestJob)}: ${e === 'must be no more than 63 characters' ? tooLong('pod') : e}`,
            );
        }
      });
      for (const target of spec.successPolicy?.targetReplicatedJobs ?? [])
        if (!names.has(target))
          out.push(`invalid replicatedJob name '${target}' does not appear in .spec.ReplicatedJobs`);
      return out;
    }
    const before = old.spec ?? {};
    // Suspended (or being suspended), the pod templates' scheduling directives may change (Kueue).
    const suspended = before.suspend === true || spec.suspend === true;
    const strip = (rjobs: any[] | undefined) =>
      structuredClone(rjobs ?? []).map((rjob: any) => {
        const template = rjob.template?.spec?.template;
        if (suspended && template) {
          for (const key of ['labels', 'annotations']) delete template.metadata?.[key];
          for (const key of ['nodeSelector', 'tolerations', 'schedulingGates']) delete template.spec?.[key];
          if (template.metadata && Object.keys(template.metadata).length === 0) delete template.metadata;
        }
        return rjob;
      });
    if (!same(strip(spec.replicatedJobs), strip(before.replicatedJobs)))
      out.push('spec.replicatedJobs: Invalid value: "array": field is immutable');
    if (!same(spec.managedBy, before.managedBy))
      out.push(`spec.managedBy: Invalid value: ${quote(spec.managedBy ?? null)}: field is immutable`);
    return out;
  },
};

const PYTORCH_MANAGERS = ['kubeflow.org/training-operator', 'kueue.x-k8s.io/multikueue'];

const pyTorchJobWebhook: Webhook = {
  name: 'validator.pytorchjob.training-operator.kubeflow.org',
  refusal: 'denied',
  // ValidateUpdate passes the new object as the old one too, so managedBy is never found changed.
  validate(job) {
    const out: string[] = [];
    const name: string = job.metadata?.name ?? '';
    const nameErrors = dns1035LabelErrors(name);
    if (nameErrors.length)
      out.push(`metadata.name: Invalid value: ${quote(name)}: should match: ${nameErrors.join(',')}`);
    const manager = job.spec?.runPolicy?.managedBy;
    if (manager !== undefined && !PYTORCH_MANAGERS.includes(manager))
      out.push(
        `spec.runPolicy.managedBy: Unsupported value: ${quote(manager)}: supported values: ${PYTORCH_MANAGERS.map(quote).join(', ')}`,
      );
    const specs: Record<string, any> = job.spec?.pytorchReplicaSpecs ?? {};
    if (job.spec?.elasticPolicy && !specs.Worker)
      out.push(
        'spec.pytorchReplicaSpecs[Worker]: Required value: must be configured if elastic policy is used',
      );
    for (const [type, rspec] of Object.entries(specs)) {
      const at = `spec.pytorchReplicaSpecs[${type}]`;
      const containersAt = `${at}.template.spec.containers`;
      if (type !== 'Master' && type !== 'Worker')
        out.push(`${at}: Unsupported value: ${quote(type)}: supported values: "Master", "Worker"`);
      const containers: any[] = rspec?.template?.spec?.containers ?? [];
      if (containers.length === 0) out.push(`${containersAt}: Required value: must be specified`);
      containers.forEach((c, i) => {
        if (!c.image) out.push(`${containersAt}[${i}].image: Required value: must be required`);
      });
      if (!containers.some((c) => c.name === 'pytorch'))
        out.push(`${containersAt}: Required value: must have at least one container with name pytorch`);
      if (type === 'Master' && rspec?.replicas !== 1) out.push(`${at}.replicas: Forbidden: must be 1`);
      if (type === 'Worker' && rspec?.replicas !== undefined && rspec.replicas < 1)
        out.push(`${at}.replicas: Forbidden: must be at least 1`);
    }
    return out;
  },
};

export const WEBHOOKS: Record<string, Webhook> = {
  JobSet: jobSetWebhook,
  PyTorchJob: pyTorchJobWebhook,
};
