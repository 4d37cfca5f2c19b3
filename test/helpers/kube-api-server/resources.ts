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
}

export const RESOURCE_TYPES: ResourceType[] = [
  {
    kind: 'Namespace',
    group: '',
    version: 'v1',
    plural: 'namespaces',
    singular: 'namespace',
    namespaced: false,
    hasStatus: true,
  },
  {
    kind: 'Node',
    group: '',
    version: 'v1',
    plural: 'nodes',
    singular: 'node',
    namespaced: false,
    hasStatus: true,
  },
  {
    kind: 'Pod',
    group: '',
    version: 'v1',
    plural: 'pods',
    singular: 'pod',
    namespaced: true,
    hasStatus: true,
  },
  {
    kind: 'ServiceAccount',
    group: '',
    version: 'v1',
    plural: 'serviceaccounts',
    singular: 'serviceaccount',
    namespaced: true,
    hasStatus: false,
  },
  {
    kind: 'ResourceQuota',
    group: '',
    version: 'v1',
    plural: 'resourcequotas',
    singular: 'resourcequota',
    namespaced: true,
    hasStatus: true,
  },
  {
    kind: 'LimitRange',
    group: '',
    version: 'v1',
    plural: 'limitranges',
    singular: 'limitrange',
    namespaced: true,
    hasStatus: false,
  },
  {
    kind: 'Job',
    group: 'batch',
    version: 'v1',
    plural: 'jobs',
    singular: 'job',
    namespaced: true,
    hasStatus: true,
  },
  {
    kind: 'NetworkPolicy',
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'networkpolicies',
    singular: 'networkpolicy',
    namespaced: true,
    hasStatus: false,
  },
  {
    kind: 'PriorityClass',
    group: 'scheduling.k8s.io',
    version: 'v1',
    plural: 'priorityclasses',
    singular: 'priorityclass',
    namespaced: false,
    hasStatus: false,
  },
];

export function groupVersion(t: ResourceType): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

export function typeByKind(kind: string): ResourceType | undefined {
  return RESOURCE_TYPES.find((t) => t.kind.toLowerCase() === kind.toLowerCase());
}

export function typeByPath(groupVersionPath: string, plural: string): ResourceType | undefined {
  return RESOURCE_TYPES.find((t) => groupVersion(t) === groupVersionPath && t.plural === plural);
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** GET /api/v1 or /apis/<group>/<version>: an APIResourceList, or undefined for an unknown group version. */
export function apiResourceList(gv: string): object | undefined {
  const types = RESOURCE_TYPES.filter((t) => groupVersion(t) === gv);
  if (types.length === 0) return undefined;
  const resources = types.flatMap((t) => {
    const main = {
      name: t.plural,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: VERBS,
    };
    if (!t.hasStatus) return [main];
    return [
      main,
      {
        name: `${t.plural}/status`,
        singularName: '',
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: ['get', 'patch', 'update'],
      },
    ];
  });
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv, resources };
}

/** GET /apis: every named group this server serves. */
export function apiGroupList(): object {
  const groups = [...new Set(RESOURCE_TYPES.filter((t) => t.group).map((t) => groupVersion(t)))].map((gv) => {
    const [name, version] = gv.split('/') as [string, string];
    const versionEntry = { groupVersion: gv, version };
    return { name, versions: [versionEntry], preferredVersion: versionEntry };
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
  details?: { name?: string; kind?: string; group?: string; uid?: string };
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
