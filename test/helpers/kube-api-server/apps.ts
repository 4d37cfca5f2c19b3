/**
 * What the API server does with apps/v1 Deployments and ReplicaSets and autoscaling/v2
 * HorizontalPodAutoscalers on every write, in its words (pkg/apis/apps, pkg/apis/autoscaling):
 * - decoding: an int32 field that is not one (`replicas: 1.5`) is a 400 `cannot be handled as a …`;
 * - defaults (SetDefaults_Deployment / _ReplicaSet / _HorizontalPodAutoscaler): replicas 1, strategy
 *   RollingUpdate 25% / 25%, revisionHistoryLimit 10, progressDeadlineSeconds 600, the template's pod
 *   spec defaults; an HPA's minReplicas 1, its CPU 80% metric, the behavior's rules when it has one;
 * - validation: selector required, not empty and matching the template's labels, containers required,
 *   restartPolicy Always, replicas ≥ 0, the strategy; an HPA's scaleTargetRef, minReplicas ≥ 1,
 *   maxReplicas ≥ minReplicas; the selector is immutable; values are printed as Go prints them.
 */
import { podSpecDefaults } from './defaults.js';
import { labelErrors } from './names.js';
import { ApiError } from './resources.js';
import { selectorMatches } from './selectors.js';

export const APPS_KINDS = new Set(['Deployment', 'ReplicaSet', 'HorizontalPodAutoscaler']);
/** The annotation the ReplicaSet controller ranks pods by on scale-down (lower goes first). */
export const POD_DELETION_COST = 'controller.kubernetes.io/pod-deletion-cost';

const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON with every object's keys sorted: equal for equal values whatever the order they came in. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    isObject(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );
}

// ---- Go's %#v, for the values the real messages print ----

const goQuote = (s: unknown) => JSON.stringify(String(s));

export function goStringMap(m: Record<string, string> | undefined | null): string {
  if (m === undefined || m === null) return 'map[string]string(nil)';
  const entries = Object.keys(m)
    .sort()
    .map((k) => `${goQuote(k)}:${goQuote(m[k])}`);
  return `map[string]string{${entries.join(', ')}}`;
}

const goStrings = (v: unknown[] | undefined) =>
  v === undefined || v === null ? '[]string(nil)' : `[]string{${v.map(goQuote).join(', ')}}`;

export function goSelector(sel: any): string {
  const exprs: any[] | undefined = sel?.matchExpressions;
  const requirements =
    exprs === undefined || exprs === null
      ? '[]v1.LabelSelectorRequirement(nil)'
      : `[]v1.LabelSelectorRequirement{${exprs
          .map(
            (e) =>
              `v1.LabelSelectorRequirement{Key:${goQuote(e.key)}, Operator:${goQuote(e.operator)}, Values:${goStrings(e.values)}}`,
          )
          .join(', ')}}`;
  return `v1.LabelSelector{MatchLabels:${goStringMap(sel?.matchLabels)}, MatchExpressions:${requirements}}`;
}

const goIntOrString = (v: unknown) =>
  typeof v === 'number'
    ? `intstr.IntOrString{Type:0, IntVal:${v}, StrVal:""}`
    : `intstr.IntOrString{Type:1, IntVal:0, StrVal:${goQuote(v)}}`;

// ---- decoding ----

const INT32_FIELDS: Record<string, [string, string[]]> = {
  Deployment: [
    'DeploymentSpec',
    ['replicas', 'minReadySeconds', 'revisionHistoryLimit', 'progressDeadlineSeconds'],
  ],
  ReplicaSet: ['ReplicaSetSpec', ['replicas', 'minReadySeconds']],
  HorizontalPodAutoscaler: ['HorizontalPodAutoscalerSpec', ['minReplicas', 'maxReplicas']],
  Scale: ['ScaleSpec', ['replicas']],
};

/** What Go's encoding/json says of a value it cannot put in an int32, or undefined when it can. */
function int32Problem(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number')
    return Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31 ? undefined : `number ${value}`;
  return Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value;
}

/** 400 BadRequest, as the decoder answers a body whose int32 field is not one. */
export function decodeCheck(obj: any, version = 'v1'): void {
  const fields = INT32_FIELDS[obj?.kind];
  if (!fields) return;
  const [struct, names] = fields;
  for (const name of names) {
    const problem = int32Problem(obj.spec?.[name]);
    if (problem)
      throw new ApiError(
        400,
        'BadRequest',
        `${obj.kind} in version "${version}" cannot be handled as a ${obj.kind}: json: cannot unmarshal ${problem} into Go struct field ${struct}.spec.${name} of type int32`,
      );
  }
}

// ---- defaults ----

function deploymentDefaults(d: any): void {
  const spec = (d.spec ??= {});
  spec.replicas ??= 1;
  const strategy = (spec.strategy ??= {});
  strategy.type ??= 'RollingUpdate';
  if (strategy.type === 'RollingUpdate') {
    const rolling = (strategy.rollingUpdate ??= {});
    rolling.maxUnavailable ??= '25%';
    rolling.maxSurge ??= '25%';
  }
  spec.revisionHistoryLimit ??= 10;
  spec.progressDeadlineSeconds ??= 600;
  if (isObject(spec.template)) podSpecDefaults(spec.template.spec);
  d.status ??= {};
}

function replicaSetDefaults(rs: any): void {
  const spec = (rs.spec ??= {});
  spec.replicas ??= 1;
  if (isObject(spec.template)) podSpecDefaults(spec.template.spec);
  rs.status ??= { replicas: 0 };
}

/** GenerateHPAScaleUpRules / GenerateHPAScaleDownRules: what a behavior leaves unset. */
function scalingRules(rules: any, up: boolean): any {
  const out = { ...(rules ?? {}) };
  if (up) out.stabilizationWindowSeconds ??= 0;
  out.selectPolicy ??= 'Max';
  out.policies ??= up
    ? [
        { type: 'Pods', value: 4, periodSeconds: 15 },
        { type: 'Percent', value: 100, periodSeconds: 15 },
      ]
    : [{ type: 'Percent', value: 100, periodSeconds: 15 }];
  return out;
}

function hpaDefaults(hpa: any): void {
  const spec = (hpa.spec ??= {});
  spec.minReplicas ??= 1;
  if (!Array.isArray(spec.metrics) || spec.metrics.length === 0)
    spec.metrics = [
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } },
      },
    ];
  if (isObject(spec.behavior)) {
    spec.behavior.scaleUp = scalingRules(spec.behavior.scaleUp, true);
    spec.behavior.scaleDown = scalingRules(spec.behavior.scaleDown, false);
  }
  hpa.status ??= { desiredReplicas: 0 };
}

/** Decodes (decodeCheck: a 400 for a non-integer count) and defaults an apps/v1 or autoscaling/v2 object, in place. */
export function appsDefaults(obj: any, version: string): void {
  decodeCheck(obj, version);
  if (obj.kind === 'Deployment') deploymentDefaults(obj);
  else if (obj.kind === 'ReplicaSet') replicaSetDefaults(obj);
  else if (obj.kind === 'HorizontalPodAutoscaler') hpaDefaults(obj);
}

// ---- validation ----

const nonNegative = (value: unknown, path: string): string[] =>
  typeof value === 'number' && value < 0
    ? [`${path}: Invalid value: ${value}: must be greater than or equal to 0`]
    : [];

/** GetDeletionCostFromPodAnnotations: an int32 without a sign or leading zeros. */
export function deletionCost(annotations: Record<string, string> | undefined): number | undefined {
  const value = annotations?.[POD_DELETION_COST];
  if (value === undefined) return 0;
  if (!/^(-?[1-9]\d*|0)$/.test(value)) return undefined;
  const n = Number(value);
  return n >= -(2 ** 31) && n < 2 ** 31 ? n : undefined;
}

/** ValidatePodSpecificAnnotations' check of the deletion cost (pods and pod templates). */
export function deletionCostErrors(annotations: Record<string, string> | undefined, path: string): string[] {
  if (deletionCost(annotations) !== undefined) return [];
  return [
    `${path}[${POD_DELETION_COST}]: Invalid value: ${goQuote(annotations?.[POD_DELETION_COST])}: must be a 32bit integer`,
  ];
}

const selectorEmpty = (sel: any) =>
  Object.keys(sel?.matchLabels ?? {}).length + (sel?.matchExpressions ?? []).length === 0;

/** ValidateReplicaSetSpec / the shared part of ValidateDeploymentSpec (replicas, selector, template). */
function replicatedSpecErrors(spec: any, afterReplicas: string[] = []): string[] {
  const out = [...nonNegative(spec.replicas, 'spec.replicas'), ...afterReplicas];
  const selector = spec.selector;
  if (!selector) out.push('spec.selector: Required value');
  else if (selectorEmpty(selector))
    out.push(
      `spec.selector: Invalid value: ${goSelector(selector)}: empty selector is invalid for deployment`,
    );
  const template: any = isObject(spec.template) ? spec.template : {}; // a struct: absent reads as empty
  const labels = template.metadata?.labels;
  // A missing selector selects nothing (labels.Nothing), an empty one everything.
  if (!selector || (!selectorEmpty(selector) && !selectorMatches(selector, labels)))
    out.push(
      `spec.template.metadata.labels: Invalid value: ${goStringMap(labels)}: \`selector\` does not match template \`labels\``,
    );
  out.push(...labelErrors(labels, 'spec.template.labels')); // ValidatePodTemplateSpec's path
  out.push(...deletionCostErrors(template.metadata?.annotations, 'spec.template.annotations'));
  const pod = template.spec ?? {};
  if (!Array.isArray(pod.containers) || pod.containers.length === 0)
    out.push('spec.template.spec.containers: Required value');
  if (pod.restartPolicy !== undefined && pod.restartPolicy !== 'Always')
    out.push(
      `spec.template.spec.restartPolicy: Unsupported value: ${goQuote(pod.restartPolicy)}: supported values: "Always"`,
    );
  if (pod.activeDeadlineSeconds !== undefined)
    out.push(
      `spec.template.spec.activeDeadlineSeconds: Invalid value: ${pod.activeDeadlineSeconds}: activeDeadlineSeconds in ReplicaSet is not Supported`,
    );
  return out;
}

const PERCENT = /^[0-9]+%$/;

function intOrPercentErrors(value: unknown, path: string): string[] {
  if (typeof value === 'string' && !PERCENT.test(value))
    return [
      `${path}: Invalid value: ${goIntOrString(value)}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')`,
    ];
  return typeof value === 'number' ? nonNegative(value, path) : [];
}

const amount = (v: unknown) => (typeof v === 'number' ? v : Number.parseInt(String(v ?? '0'), 10) || 0);

function strategyErrors(strategy: any): string[] {
  const path = 'spec.strategy';
  if (strategy?.type === 'Recreate')
    return strategy.rollingUpdate
      ? [`${path}.rollingUpdate: Forbidden: may not be specified when strategy \`type\` is 'Recreate'`]
      : [];
  if (strategy?.type !== 'RollingUpdate')
    return [
      `${path}: Unsupported value: apps.DeploymentStrategy{Type:${goQuote(strategy?.type ?? '')}, RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: "Recreate", "RollingUpdate"`,
    ];
  const { maxUnavailable, maxSurge } = strategy.rollingUpdate ?? {};
  const out = [
    ...intOrPercentErrors(maxUnavailable, `${path}.rollingUpdate.maxUnavailable`),
    ...intOrPercentErrors(maxSurge, `${path}.rollingUpdate.maxSurge`),
  ];
  if (amount(maxUnavailable) === 0 && amount(maxSurge) === 0)
    out.push(
      `${path}.rollingUpdate.maxUnavailable: Invalid value: ${goIntOrString(maxUnavailable)}: may not be 0 when \`maxSurge\` is 0`,
    );
  if (typeof maxUnavailable === 'string' && PERCENT.test(maxUnavailable) && amount(maxUnavailable) > 100)
    out.push(
      `${path}.rollingUpdate.maxUnavailable: Invalid value: ${goQuote(maxUnavailable)}: must not be greater than 100%`,
    );
  return out;
}

function deploymentErrors(d: any): string[] {
  const spec = d.spec ?? {};
  const out = [...replicatedSpecErrors(spec), ...strategyErrors(spec.strategy)];
  out.push(...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  out.push(...nonNegative(spec.revisionHistoryLimit, 'spec.revisionHistoryLimit'));
  const deadline = spec.progressDeadlineSeconds;
  if (typeof deadline === 'number') {
    out.push(...nonNegative(deadline, 'spec.progressDeadlineSeconds'));
    if (deadline <= (spec.minReadySeconds ?? 0))
      out.push(
        `spec.progressDeadlineSeconds: Invalid value: ${deadline}: must be greater than minReadySeconds`,
      );
  }
  return out;
}

function replicaSetErrors(rs: any): string[] {
  const spec = rs.spec ?? {};
  return replicatedSpecErrors(spec, nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
}

function hpaErrors(hpa: any): string[] {
  const spec = hpa.spec ?? {};
  const out: string[] = [];
  const min = spec.minReplicas;
  const max = spec.maxReplicas ?? 0;
  if (typeof min === 'number' && min < 1)
    out.push(`spec.minReplicas: Invalid value: ${min}: must be greater than or equal to 1`);
  if (max < 1) out.push(`spec.maxReplicas: Invalid value: ${max}: must be greater than 0`);
  if (typeof min === 'number' && max < min)
    out.push(`spec.maxReplicas: Invalid value: ${max}: must be greater than or equal to \`minReplicas\``);
  const ref = spec.scaleTargetRef ?? {};
  if (!ref.kind) out.push('spec.scaleTargetRef.kind: Required value');
  if (!ref.name) out.push('spec.scaleTargetRef.name: Required value');
  return out;
}

/** The rule violations of an apps/v1 or autoscaling/v2 object, or of a pod's deletion cost. */
export function appsErrors(obj: any): string[] {
  switch (obj.kind) {
    case 'Deployment':
      return deploymentErrors(obj);
    case 'ReplicaSet':
      return replicaSetErrors(obj);
    case 'HorizontalPodAutoscaler':
      return hpaErrors(obj);
    case 'Pod':
      return deletionCostErrors(obj.metadata?.annotations, 'metadata.annotations');
    default:
      return [];
  }
}

/** What an update may not change: the selector of a Deployment or ReplicaSet (apps/v1). */
export function appsUpdateErrors(current: any, next: any): string[] {
  if (current.kind !== 'Deployment' && current.kind !== 'ReplicaSet') return [];
  const same = canonical(current.spec?.selector ?? null) === canonical(next.spec?.selector ?? null);
  return same ? [] : [`spec.selector: Invalid value: ${goSelector(next.spec?.selector)}: field is immutable`];
}
