/**
 * What the Kubernetes backend may do in the cluster: the single source of truth for the
 * ClusterRole in deploy/kubernetes/rbac.yaml and deploy/helm/fairway/templates/rbac.yaml
 * (test/deploy/deploy.test.ts fails when either drifts from this list). Least privilege: every verb
 * here is one the backend uses, and nothing reads Secrets or ConfigMaps, execs into pods or
 * touches workloads outside the namespaces it manages.
 */
export interface RbacRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

export const FAIRWAY_RBAC_RULES: RbacRule[] = [
  // One namespace per tenant (created, labelled, deleted with the tenant); watched to notice removals.
  {
    apiGroups: [''],
    resources: ['namespaces'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
  },
  // The tenant's fences inside its namespace: quota, container defaults, the workload service account.
  {
    apiGroups: [''],
    resources: ['resourcequotas', 'limitranges', 'serviceaccounts'],
    verbs: ['get', 'list', 'create', 'patch', 'delete'],
  },
  // Network isolation between tenants (and the egress allowlist).
  {
    apiGroups: ['networking.k8s.io'],
    resources: ['networkpolicies'],
    verbs: ['get', 'list', 'create', 'patch', 'delete'],
  },
  // One Job per pod set of an admitted job: started, suspended on preemption, deleted on cancel; watched for
  // state.
  { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  // A headless Service per multi-pod job: its pods' DNS names for the rendezvous.
  { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'create', 'delete'] },
  // Pod phases and failure reasons (image pull errors, OOM kills) for job status; patch: a gated pod is
  // released to the node Fairway placed it on (its nodeSelector and scheduling gates, nothing else), or
  // given to an inference replica (its job label); delete: a leaving replica's own pod, drained.
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch', 'delete'] },
  // Job logs: the output of Fairway's pods (read, followed, archived as they end), never exec.
  { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
  // What the cluster says about Fairway's pods and Jobs (scheduling failures, image pulls, kills), shown
  // with the job; watched in the tenant namespaces only, but a ClusterRole grants it everywhere.
  { apiGroups: [''], resources: ['events'], verbs: ['list', 'watch'] },
  // Read-only: the GPU inventory (allocatable resources, product and pool labels, taints, readiness).
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
  // The best-effort priority class, created once and kept in shape.
  { apiGroups: ['scheduling.k8s.io'], resources: ['priorityclasses'], verbs: ['get', 'create', 'patch'] },
  // Jobs run by their teams' workload controllers: one object per admission, suspended and resumed.
  {
    apiGroups: ['jobset.x-k8s.io', 'kubeflow.org', 'ray.io'],
    resources: ['jobsets', 'pytorchjobs', 'rayjobs', 'rayclusters'],
    verbs: ['get', 'list', 'create', 'patch', 'delete'],
  },
  // Inference services: a Deployment (or LeaderWorkerSet) per revision whose count Fairway sets.
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'create', 'patch', 'delete'] },
  {
    apiGroups: ['leaderworkerset.x-k8s.io'],
    resources: ['leaderworkersets'],
    verbs: ['get', 'list', 'create', 'patch', 'delete'],
  },
  // An HPA aimed at a service's workload would fight Fairway's count: found and removed.
  { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: ['list', 'delete'] },
];
