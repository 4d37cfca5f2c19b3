/**
 * The resource kinds the test API server serves, with what discovery says about them, and the
 * Kubernetes `Status` bodies it answers errors with.
 */
export interface ResourceType {
  kind: string;
  /** '' for the core group (served under /api/v1). */
  group: string;
  version: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  /** Whether writes to the main resource ignore `status` (it has a /status subresource). */
  hasStatus: boolean;
  /** Another API version of a stored kind (events.k8s.io/v1 Event): served through `storedAs`, converted. */
  storedAs?: string;
  /** Subresources besides status, for discovery: name → [kind, group, version, verbs]. */
  subresources?: Record<string, [string, string, string, string[]]>;
  shortNames?: string[];
  categories?: string[];
  /** A version of a CustomResourceDefinition (crds.ts): its schema, and whether objects are stored in it. */
  custom?: CustomVersion;
}

export interface CustomVersion {
  /** The CRD's name (`<plural>.<group>`). */
  crd: string;
  /** The version's openAPIV3Schema (structural). */
  schema: any;
  storage: boolean;
  /** Served through the API (a storage version can be unserved: then only the store uses its type). */
  served: boolean;
}

const type = (
  kind: string,
  group: string,
  plural: string,
  namespaced: boolean,
  hasStatus: boolean,
  extra: Partial<ResourceType> = {},
): ResourceType => ({
  kind,
  group,
  version: 'v1',
  plural,
  singular: kind.toLowerCase(),
  namespaced,
  hasStatus,
  ...extra,
});

/** The /scale subresource: an autoscaling/v1 Scale. */
const SCALE: [string, string, string, string[]] = ['Scale', 'autoscaling', 'v1', ['get', 'patch', 'update']];

export const RESOURCE_TYPES: ResourceType[] = [
  type('Namespace', '', 'namespaces', false, true),
  type('Node', '', 'nodes', false, true),
  type('Pod', '', 'pods', true, true, {
    subresources: { eviction: ['Eviction', 'policy', 'v1', ['create']], log: ['Pod', '', 'v1', ['get']] },
  }),
  type('Service', '', 'services', true, true),
  type('Event', '', 'events', true, false),
  type('ServiceAccount', '', 'serviceaccounts', true, false),
  type('ResourceQuota', '', 'resourcequotas', true, true),
  type('LimitRange', '', 'limitranges', true, false),
  type('Job', 'batch', 'jobs', true, true),
  // apps/v1 workloads and their autoscaler (apps.ts, deployment-controller.ts, replicaset-controller.ts, hpa-controller.ts).
  type('Deployment', 'apps', 'deployments', true, true, {
    subresources: { scale: SCALE },
    shortNames: ['deploy'],
    categories: ['all'],
  }),
  type('ReplicaSet', 'apps', 'replicasets', true, true, {
    subresources: { scale: SCALE },
    shortNames: ['rs'],
    categories: ['all'],
  }),
  type('HorizontalPodAutoscaler', 'autoscaling', 'horizontalpodautoscalers', true, true, {
    version: 'v2',
    shortNames: ['hpa'],
    categories: ['all'],
  }),
  type('NetworkPolicy', 'networking.k8s.io', 'networkpolicies', true, false),
  type('PriorityClass', 'scheduling.k8s.io', 'priorityclasses', false, false),
  type('Lease', 'coordination.k8s.io', 'leases', true, false),
  type('CustomResourceDefinition', 'apiextensions.k8s.io', 'customresourcedefinitions', false, true, {
    shortNames: ['crd', 'crds'],
  }),
  // The same objects as core v1 Events, in the newer shape (regarding/note/eventTime): see events.ts.
  type('Event', 'events.k8s.io', 'events', true, false, { storedAs: 'Event' }),
];

export function groupVersion(t: ResourceType): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

/** The stored type of a kind (for Event: the core v1 one); `extra`: the custom types a server serves. */
export function typeByKind(kind: string, extra: readonly ResourceType[] = []): ResourceType | undefined {
  const wanted = kind.toLowerCase();
  return [...RESOURCE_TYPES, ...extra].find((t) => !t.storedAs && t.kind.toLowerCase() === wanted);
}

export function typeByPath(
  groupVersionPath: string,
  plural: string,
  extra: readonly ResourceType[] = [],
): ResourceType | undefined {
  return [...RESOURCE_TYPES, ...extra].find(
    (t) => groupVersion(t) === groupVersionPath && t.plural === plural && t.custom?.served !== false,
  );
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

const served = (extra: readonly ResourceType[]) =>
  [...RESOURCE_TYPES, ...extra].filter((t) => t.custom?.served !== false);

/** GET /api/v1 or /apis/<group>/<version>: an APIResourceList, or undefined for an unknown group version. */
export function apiResourceList(gv: string, extra: readonly ResourceType[] = []): object | undefined {
  const types = served(extra).filter((t) => groupVersion(t) === gv);
  if (types.length === 0) return undefined;
  const resources = types.flatMap((t) => {
    const main = {
      name: t.plural,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: VERBS,
      ...(t.shortNames?.length ? { shortNames: t.shortNames } : {}),
      ...(t.categories?.length ? { categories: t.categories } : {}),
    };
    const status = {
      name: `${t.plural}/status`,
      singularName: '',
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: ['get', 'patch', 'update'],
    };
    const others = Object.entries(t.subresources ?? {}).map(([name, [kind, group, version, verbs]]) => ({
      name: `${t.plural}/${name}`,
      singularName: '',
      namespaced: t.namespaced,
      group,
      version,
      kind,
      verbs,
    }));
    return [main, ...(t.hasStatus ? [status] : []), ...others];
  });
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv, resources };
}

/** Kubernetes' version order: GA before beta before alpha, higher numbers first (v2 > v1 > v1beta2 > v1alpha1). */
export function versionPriority(a: string, b: string): number {
  const rank = (v: string): [number, number, number] => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [3, 0, 0];
    const level = m[2] === 'alpha' ? 2 : m[2] === 'beta' ? 1 : 0;
    return [level, -Number(m[1]), -Number(m[3] ?? 0)];
  };
  const [x, y] = [rank(a), rank(b)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2] || a.localeCompare(b);
}

/** GET /apis/<group>: the APIGroup, or undefined when no version of it is served. */
export function apiGroup(name: string, extra: readonly ResourceType[] = []): object | undefined {
  const versions = [
    ...new Set(
      served(extra)
        .filter((t) => t.group === name)
        .map((t) => t.version),
    ),
  ].sort(versionPriority);
  if (versions.length === 0) return undefined;
  const entries = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { kind: 'APIGroup', apiVersion: 'v1', name, versions: entries, preferredVersion: entries[0] };
}

/** GET /apis: every named group this server serves. */
export function apiGroupList(extra: readonly ResourceType[] = []): object {
  const names = [
    ...new Set(
      served(extra)
        .filter((t) => t.group)
        .map((t) => t.group),
    ),
  ];
  const groups = names.map((name) => {
    const { kind: _k, apiVersion: _a, ...group } = apiGroup(name, extra) as Record<string, unknown>;
    return group;
  });
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  reason?: string;
  message?: string;
  code: number;
  details?: {
    name?: string;
    kind?: string;
    group?: string;
    uid?: string;
    causes?: { reason?: string; type?: string; message: string; field?: string }[];
  };
}

/** A Kubernetes `Status` as the real API server writes it for errors. */
export function statusBody(
  code: number,
  reason: string,
  message: string,
  details?: StatusBody['details'],
): StatusBody {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    reason,
    message,
    code,
    ...(details ? { details } : {}),
  };
}

/** An error a store operation throws, answered as its Status. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusBody['details'],
  ) {
    super(message);
  }
  status(): StatusBody {
    return statusBody(this.code, this.reason, this.message, this.details);
  }
}

export function notFound(t: ResourceType, name: string): ApiError {
  const resource = t.group ? `${t.plural}.${t.group}` : t.plural;
  return new ApiError(404, 'NotFound', `${resource} "${name}" not found`, {
    name,
    kind: t.plural,
    group: t.group,
  });
}

/** `jobs.batch`, `pods`: how error messages name a resource. */
export function resourceName(t: ResourceType): string {
  return t.group ? `${t.plural}.${t.group}` : t.plural;
}

/** 403 Forbidden from an admission plugin: `pods "x" is forbidden: <why>`. */
export function forbidden(t: ResourceType, name: string, why: string): ApiError {
  return new ApiError(403, 'Forbidden', `${resourceName(t)} "${name}" is forbidden: ${why}`, {
    name,
    kind: t.plural,
    group: t.group,
  });
}

const CAUSES: Record<string, string> = {
  'Invalid value': 'FieldValueInvalid',
  'Required value': 'FieldValueRequired',
  Forbidden: 'FieldValueForbidden',
  'Unsupported value': 'FieldValueNotSupported',
  'Duplicate value': 'FieldValueDuplicate',
  'Too long': 'FieldValueTooLong',
  'Too many': 'FieldValueTooMany',
};

/** 422 Invalid, as field validation answers: `Job.batch "x" is invalid: [a, b]`, with one cause per error. */
export function invalid(t: ResourceType, name: string, errors: string[]): ApiError {
  const kind = t.group ? `${t.kind}.${t.group}` : t.kind;
  const text = errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`;
  const causes = errors.map((e) => {
    const m =
      /^([\w.[\]\-/~'"=()*]+): (Invalid value|Required value|Forbidden|Unsupported value|Duplicate value|Too long|Too many)/.exec(
        e,
      );
    if (!m) return { reason: 'FieldValueInvalid', message: e };
    return { reason: CAUSES[m[2]!], message: e.slice(m[1]!.length + 2), field: m[1] };
  });
  return new ApiError(422, 'Invalid', `${kind} "${name}" is invalid: ${text}`, {
    name,
    kind: t.plural,
    group: t.group,
    causes,
  });
}
