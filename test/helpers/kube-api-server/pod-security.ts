/**
 * Pod Security admission (k8s.io/pod-security-admission, policy version "latest"): the checks of the
 * `baseline` and `restricted` levels a namespace enforces with its `pod-security.kubernetes.io/enforce`
 * label, with the real plugin's reasons and details, in the order of its check IDs:
 * `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "main" must set
 * securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (...), ...`.
 */

type Level = 'privileged' | 'baseline' | 'restricted';
interface Check {
  id: string;
  level: 'baseline' | 'restricted';
  /** A restricted check replacing a baseline one of the same concern. */
  overrides?: string;
  run(pod: PodView): [reason: string, detail: string] | undefined;
}

interface PodView {
  spec: any;
  containers: any[];
}

const q = (s: string) => JSON.stringify(s);
/** `container "a"` / `containers "a", "b"` */
const named = (what: string, names: string[]) =>
  `${what}${names.length > 1 ? 's' : ''} ${names.map(q).join(', ')}`;
const plural = (names: string[], one: string, many: string) => (names.length > 1 ? many : one);

const BASELINE_CAPABILITIES = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);
const RESTRICTED_VOLUME_TYPES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);
const VOLUME_META = new Set(['name']);

/** `container "a" must not include "SYS_ADMIN" in securityContext.capabilities.add`, aggregated. */
function addedCapabilities(pod: PodView, allowed: (cap: string) => boolean): string | undefined {
  const containers: string[] = [];
  const caps = new Set<string>();
  for (const c of pod.containers) {
    const bad = (c.securityContext?.capabilities?.add ?? []).filter((cap: string) => !allowed(cap));
    if (!bad.length) continue;
    containers.push(c.name);
    for (const cap of bad) caps.add(cap);
  }
  if (!containers.length) return undefined;
  const list = [...caps].sort().map(q).join(', ');
  return `${named('container', containers)} must not include ${list} in securityContext.capabilities.add`;
}

/** The pod-or-containers pattern of runAsNonRoot and seccompProfile: explicit bad values first. */
function podOrContainers(
  pod: PodView,
  read: (securityContext: any) => unknown,
  good: (v: unknown) => boolean,
  mustNot: (v: unknown) => string,
  must: string,
): string | undefined {
  const badSetters: string[] = [];
  const podValue = read(pod.spec.securityContext);
  if (podValue !== undefined && !good(podValue)) badSetters.push(`pod must not set ${mustNot(podValue)}`);
  const podGood = podValue !== undefined && good(podValue);
  const explicit: any[] = [];
  const implicit: string[] = [];
  for (const c of pod.containers) {
    const v = read(c.securityContext);
    if (v !== undefined) {
      if (!good(v)) explicit.push(c);
    } else if (!podGood) implicit.push(c.name);
  }
  if (explicit.length) {
    const values = [...new Set(explicit.map((c) => String(read(c.securityContext))))];
    badSetters.push(
      `${named(
        'container',
        explicit.map((c) => c.name),
      )} must not set ${mustNot(values.length === 1 ? values[0] : values)}`,
    );
  }
  if (badSetters.length) return badSetters.join(' and ');
  if (implicit.length) return `pod or ${named('container', implicit)} must set ${must}`;
  return undefined;
}

const CHECKS: Check[] = [
  {
    id: 'allowPrivilegeEscalation',
    level: 'restricted',
    run: (pod) => {
      const bad = pod.containers
        .filter((c) => c.securityContext?.allowPrivilegeEscalation !== false)
        .map((c) => c.name);
      if (!bad.length) return undefined;
      return [
        'allowPrivilegeEscalation != false',
        `${named('container', bad)} must set securityContext.allowPrivilegeEscalation=false`,
      ];
    },
  },
  {
    id: 'capabilities_baseline',
    level: 'baseline',
    run: (pod) => {
      const detail = addedCapabilities(pod, (cap) => BASELINE_CAPABILITIES.has(cap));
      return detail ? ['non-default capabilities', detail] : undefined;
    },
  },
  {
    id: 'capabilities_restricted',
    level: 'restricted',
    overrides: 'capabilities_baseline',
    run: (pod) => {
      const noDrop = pod.containers
        .filter((c) => !(c.securityContext?.capabilities?.drop ?? []).includes('ALL'))
        .map((c) => c.name);
      const details = [
        ...(noDrop.length
          ? [`${named('container', noDrop)} must set securityContext.capabilities.drop=["ALL"]`]
          : []),
      ];
      const added = addedCapabilities(pod, (cap) => cap === 'NET_BIND_SERVICE');
      if (added) details.push(added);
      return details.length ? ['unrestricted capabilities', details.join('; ')] : undefined;
    },
  },
  {
    id: 'hostNamespaces',
    level: 'baseline',
    run: ({ spec }) => {
      const set = ['hostNetwork', 'hostPID', 'hostIPC'].filter((f) => spec[f] === true);
      return set.length ? ['host namespaces', set.map((f) => `${f}=true`).join(', ')] : undefined;
    },
  },
  {
    id: 'hostPathVolumes',
    level: 'baseline',
    run: ({ spec }) => {
      const bad = (spec.volumes ?? []).filter((v: any) => v.hostPath).map((v: any) => v.name);
      return bad.length ? ['hostPath volumes', named('volume', bad)] : undefined;
    },
  },
  {
    id: 'hostPorts',
    level: 'baseline',
    run: (pod) => {
      const containers: string[] = [];
      const ports: number[] = [];
      for (const c of pod.containers) {
        const used = (c.ports ?? []).map((p: any) => p.hostPort).filter((p: unknown) => p);
        if (used.length) containers.push(c.name);
        ports.push(...used);
      }
      if (!containers.length) return undefined;
      return [
        'hostPort',
        `${named('container', containers)} ${plural(containers, 'uses', 'use')} hostPort${ports.length > 1 ? 's' : ''} ${ports.join(', ')}`,
      ];
    },
  },
  {
    id: 'privileged',
    level: 'baseline',
    run: (pod) => {
      const bad = pod.containers.filter((c) => c.securityContext?.privileged === true).map((c) => c.name);
      return bad.length
        ? ['privileged', `${named('container', bad)} must not set securityContext.privileged=true`]
        : undefined;
    },
  },
  {
    id: 'restrictedVolumes',
    level: 'restricted',
    overrides: 'hostPathVolumes',
    run: ({ spec }) => {
      const bad: string[] = [];
      const types = new Set<string>();
      for (const v of spec.volumes ?? []) {
        const type = Object.keys(v).find((k) => !VOLUME_META.has(k));
        if (type && !RESTRICTED_VOLUME_TYPES.has(type)) {
          bad.push(v.name);
          types.add(type);
        }
      }
      if (!bad.length) return undefined;
      const list = [...types].map(q).join(', ');
      return [
        'restricted volume types',
        `${named('volume', bad)} ${plural(bad, 'uses', 'use')} restricted volume type${types.size > 1 ? 's' : ''} ${list}`,
      ];
    },
  },
  {
    id: 'runAsNonRoot',
    level: 'restricted',
    run: (pod) => {
      const detail = podOrContainers(
        pod,
        (sc) => sc?.runAsNonRoot,
        (v) => v === true,
        () => 'securityContext.runAsNonRoot=false',
        'securityContext.runAsNonRoot=true',
      );
      return detail ? ['runAsNonRoot != true', detail] : undefined;
    },
  },
  {
    id: 'runAsUser',
    level: 'restricted',
    run: ({ spec, containers }) => {
      const details: string[] = [];
      if (spec.securityContext?.runAsUser === 0) details.push('pod must not set runAsUser=0');
      const bad = containers.filter((c) => c.securityContext?.runAsUser === 0).map((c) => c.name);
      if (bad.length) details.push(`${named('container', bad)} must not set runAsUser=0`);
      return details.length ? ['runAsUser=0', details.join('; ')] : undefined;
    },
  },
  {
    id: 'seccompProfile_baseline',
    level: 'baseline',
    run: ({ spec, containers }) => {
      const details: string[] = [];
      if (spec.securityContext?.seccompProfile?.type === 'Unconfined')
        details.push('pod must not set securityContext.seccompProfile.type to "Unconfined"');
      const bad = containers
        .filter((c) => c.securityContext?.seccompProfile?.type === 'Unconfined')
        .map((c) => c.name);
      if (bad.length)
        details.push(
          `${named('container', bad)} must not set securityContext.seccompProfile.type to "Unconfined"`,
        );
      return details.length ? ['seccompProfile', details.join('; ')] : undefined;
    },
  },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    overrides: 'seccompProfile_baseline',
    run: (pod) => {
      const detail = podOrContainers(
        pod,
        (sc) => sc?.seccompProfile?.type,
        (t) => t === 'RuntimeDefault' || t === 'Localhost',
        (v) =>
          `securityContext.seccompProfile.type to ${Array.isArray(v) ? v.map((x) => q(String(x))).join(', ') : q(String(v))}`,
        'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
      );
      return detail ? ['seccompProfile', detail] : undefined;
    },
  },
];

/** The level a namespace enforces (its `pod-security.kubernetes.io/enforce` label), and its version. */
export function enforcedLevel(namespace: any): { level: Level; version: string } {
  const labels = namespace?.metadata?.labels ?? {};
  const level = labels['pod-security.kubernetes.io/enforce'];
  const version = labels['pod-security.kubernetes.io/enforce-version'] ?? 'latest';
  return { level: level === 'baseline' || level === 'restricted' ? level : 'privileged', version };
}

/**
 * Why `pod` violates the level (`violates PodSecurity "restricted:latest": …`), or undefined.
 * Checks the pod spec of a Pod (the plugin also warns on pod templates; this one does not).
 */
export function podSecurityViolation(pod: any, level: Level, version = 'latest'): string | undefined {
  if (level === 'privileged') return undefined;
  const spec = pod.spec ?? {};
  const view: PodView = {
    spec,
    containers: [
      ...(spec.initContainers ?? []),
      ...(spec.containers ?? []),
      ...(spec.ephemeralContainers ?? []),
    ],
  };
  const active = CHECKS.filter((c) => c.level === 'baseline' || level === 'restricted');
  const overridden = new Set(active.map((c) => c.overrides).filter(Boolean));
  const failures = active
    .filter((c) => !overridden.has(c.id))
    .map((c) => c.run(view))
    .filter((r): r is [string, string] => r !== undefined);
  if (!failures.length) return undefined;
  const parts = failures.map(([reason, detail]) => `${reason} (${detail})`).join(', ');
  return `violates PodSecurity "${level}:${version}": ${parts}`;
}
