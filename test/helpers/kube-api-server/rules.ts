/**
 * Field validation beyond the OpenAPI schema, for the kinds where the real server's rules catch
 * easy mistakes (pkg/apis/batch/validation, pkg/apis/core/validation), in its words: a Job's
 * selector must be the generated one (unless manualSelector) and select its template; its pods
 * restart Never or OnFailure (Never with a podFailurePolicy); podFailurePolicy rules are checked.
 * Deployments, ReplicaSets, HorizontalPodAutoscalers and pods' deletion cost: apps.ts.
 */
import { appsErrors } from './apps.js';
import { nameErrors } from './names.js';
import { selectorMatches } from './selectors.js';

const quote = (v: unknown) => JSON.stringify(v);
const ACTIONS = ['Count', 'FailIndex', 'FailJob', 'Ignore'];

function podFailurePolicyErrors(spec: any): string[] {
  const out: string[] = [];
  const pod = spec.template?.spec ?? {};
  const names = new Set([...(pod.containers ?? []), ...(pod.initContainers ?? [])].map((c: any) => c.name));
  if (pod.restartPolicy !== 'Never')
    out.push(
      `spec.template.spec.restartPolicy: Invalid value: ${quote(pod.restartPolicy)}: only "Never" is supported when podFailurePolicy is specified`,
    );
  (spec.podFailurePolicy.rules ?? []).forEach((rule: any, i: number) => {
    const at = `spec.podFailurePolicy.rules[${i}]`;
    if (!ACTIONS.includes(rule.action))
      out.push(
        `${at}.action: Unsupported value: ${quote(rule.action)}: supported values: ${ACTIONS.map(quote).join(', ')}`,
      );
    if (rule.onExitCodes && rule.onPodConditions)
      out.push(`${at}: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported`);
    if (!rule.onExitCodes && !(rule.onPodConditions ?? []).length)
      out.push(`${at}: Required value: specifying one of OnExitCodes and OnPodConditions is required`);
    const codes = rule.onExitCodes;
    if (codes) {
      if (codes.operator !== 'In' && codes.operator !== 'NotIn')
        out.push(
          `${at}.onExitCodes.operator: Unsupported value: ${quote(codes.operator)}: supported values: "In", "NotIn"`,
        );
      (codes.values ?? []).forEach((v: number, j: number) => {
        if (v === 0 && codes.operator === 'In')
          out.push(`${at}.onExitCodes.values[${j}]: Invalid value: 0: must not be 0 for the In operator`);
      });
      if (codes.containerName !== undefined && !names.has(codes.containerName))
        out.push(
          `${at}.onExitCodes.containerName: Invalid value: ${quote(codes.containerName)}: must be one of the container or initContainer names in the pod template`,
        );
    }
  });
  return out;
}

function jobErrors(job: any): string[] {
  const out: string[] = [];
  const spec = job.spec ?? {};
  const labels: Record<string, string> = spec.template?.metadata?.labels ?? {};
  if (!spec.selector) out.push('spec.selector: Required value');
  else if (spec.manualSelector !== true) {
    const expected: Record<string, string> = {
      'controller-uid': job.metadata.uid,
      'batch.kubernetes.io/controller-uid': job.metadata.uid,
      'job-name': job.metadata.name,
      'batch.kubernetes.io/job-name': job.metadata.name,
    };
    for (const [key, value] of Object.entries(expected)) {
      const path = `spec.template.metadata.labels[${key}]`;
      if (!(key in labels)) out.push(`${path}: Required value: must be '${value}'`);
      else if (labels[key] !== value)
        out.push(`${path}: Invalid value: ${quote(labels)}: must be '${value}'`);
    }
    if (!selectorMatches(spec.selector, expected))
      out.push(`spec.selector: Invalid value: ${quote(spec.selector)}: \`selector\` not auto-generated`);
  }
  if (spec.selector && !selectorMatches(spec.selector, labels))
    out.push(
      `spec.template.metadata.labels: Invalid value: ${quote(labels)}: \`selector\` does not match template \`labels\``,
    );
  const restart = spec.template?.spec?.restartPolicy;
  if (restart !== 'OnFailure' && restart !== 'Never')
    out.push(
      `spec.template.spec.restartPolicy: Unsupported value: ${quote(restart)}: supported values: "OnFailure", "Never"`,
    );
  else if (spec.podFailurePolicy) out.push(...podFailurePolicyErrors(spec));
  return out;
}

function serviceErrors(service: any): string[] {
  const spec = service.spec ?? {};
  if (spec.type !== 'ExternalName' && spec.clusterIP !== 'None' && !(spec.ports ?? []).length)
    return ['spec.ports: Required value'];
  return [];
}

/** Every rule violation of `obj` (names and labels first), each as the real server words it. */
export function ruleErrors(obj: any): string[] {
  const out = nameErrors(obj);
  if (obj.kind === 'Job') out.push(...jobErrors(obj));
  if (obj.kind === 'Service') out.push(...serviceErrors(obj));
  out.push(...appsErrors(obj));
  return out;
}
