import fs from 'node:fs';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ClusterRole, ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Namespace, Service, ServiceAccount } from 'kubernetes-models/v1';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FAIRWAY_RBAC_RULES } from '../../src/backends/kubernetes/rbac.js';
import { parseKubernetesSettings } from '../../src/backends/kubernetes/settings.js';
import {
  ChartSubsetError,
  parseManifests,
  renderChart,
  renderChartObjects,
  renderTemplate,
  type TemplateScope,
} from '../helpers/chart-render.js';

const root = path.resolve(import.meta.dirname, '../..');
const manifestsDir = path.join(root, 'deploy/kubernetes');
const chartDir = path.join(root, 'deploy/helm/fairway');

type K8sObject = Record<string, any>;

/** Every kind deploy/ may contain, with its kubernetes-models class: anything else fails the test. */
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

function validateAll(objects: K8sObject[]): void {
  for (const obj of objects) {
    const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
    expect(Model, `${obj.apiVersion} ${obj.kind} is not a kind deploy/ is expected to contain`).toBeDefined();
    expect(() => new Model!(obj).validate(), `${obj.kind} ${obj.metadata?.name}`).not.toThrow();
  }
}

function manifestObjects(): K8sObject[] {
  return fs
    .readdirSync(manifestsDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) => parseManifests(fs.readFileSync(path.join(manifestsDir, f), 'utf8'), f));
}

const DEFAULT_RELEASE = { releaseName: 'fairway', namespace: 'fairway-system' };
const OVERRIDE = {
  releaseName: 'gpu-gateway',
  namespace: 'platform',
  values: {
    replicas: 3,
    image: { repository: 'ghcr.io/acme/fairway', tag: '1.2.3', pullPolicy: 'Always' },
    databaseSecret: { name: 'pg-credentials', key: 'url' },
    redis: { secretKey: '', url: 'redis://redis.platform:6379' },
    podDisruptionBudget: { enabled: false },
    resources: { limits: { memory: '4Gi' } },
    kubernetesSettings:
      'namespacePrefix: tenant-\nflavors:\n  - flavor: h100\n    resource: nvidia.com/gpu\n',
  },
};

function one(objects: K8sObject[], kind: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
}

/** The parts of the Pod Security Standard "restricted" profile this pod spec can break. */
function expectRestrictedPodSecurity(podSpec: K8sObject): void {
  expect(podSpec.hostNetwork ?? false).toBe(false);
  expect(podSpec.hostPID ?? false).toBe(false);
  expect(podSpec.hostIPC ?? false).toBe(false);
  expect(podSpec.securityContext?.runAsNonRoot).toBe(true);
  expect(podSpec.securityContext?.runAsUser).not.toBe(0);
  for (const volume of podSpec.volumes ?? []) {
    const types = Object.keys(volume).filter((k) => k !== 'name');
    expect([
      'configMap',
      'emptyDir',
      'secret',
      'projected',
      'downwardAPI',
      'persistentVolumeClaim',
      'ephemeral',
      'csi',
    ]).toEqual(expect.arrayContaining(types));
  }
  for (const container of [...(podSpec.initContainers ?? []), ...podSpec.containers]) {
    const sc = container.securityContext ?? {};
    expect(sc.allowPrivilegeEscalation, container.name).toBe(false);
    expect(sc.privileged ?? false, container.name).toBe(false);
    expect(sc.capabilities?.drop, container.name).toContain('ALL');
    expect(
      (sc.capabilities?.add ?? []).filter((c: string) => c !== 'NET_BIND_SERVICE'),
      container.name,
    ).toEqual([]);
    expect(sc.runAsNonRoot ?? podSpec.securityContext?.runAsNonRoot, container.name).toBe(true);
    const seccomp = sc.seccompProfile?.type ?? podSpec.securityContext?.seccompProfile?.type;
    expect(['RuntimeDefault', 'Localhost'], container.name).toContain(seccomp);
    expect(sc.readOnlyRootFilesystem, container.name).toBe(true);
  }
}

/** Checks that hold for the plain manifests and for every chart render. */
function expectConsistentDeployment(objects: K8sObject[]): void {
  validateAll(objects);
  const deployment = one(objects, 'Deployment');
  const podSpec = deployment.spec.template.spec;
  const container = podSpec.containers[0];
  expectRestrictedPodSecurity(podSpec);

  expect(one(objects, 'ClusterRole').rules).toEqual(FAIRWAY_RBAC_RULES);
  const serviceAccount = one(objects, 'ServiceAccount');
  const binding = one(objects, 'ClusterRoleBinding');
  expect(binding.roleRef).toEqual({
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'ClusterRole',
    name: one(objects, 'ClusterRole').metadata.name,
  });
  expect(binding.subjects).toEqual([
    {
      kind: 'ServiceAccount',
      name: serviceAccount.metadata.name,
      namespace: serviceAccount.metadata.namespace,
    },
  ]);
  expect(podSpec.serviceAccountName).toBe(serviceAccount.metadata.name);
  expect(deployment.metadata.namespace).toBe(serviceAccount.metadata.namespace);

  // Probes hit the documented endpoints on the port the Service targets.
  expect(container.livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
  expect(container.readinessProbe.httpGet).toEqual({ path: '/ready', port: 'http' });
  expect(container.ports).toEqual([{ name: 'http', containerPort: 4000, protocol: 'TCP' }]);
  const service = one(objects, 'Service');
  expect(service.spec.type).toBe('ClusterIP');
  expect(service.spec.ports[0].targetPort).toBe('http');
  for (const selector of [deployment.spec.selector.matchLabels, service.spec.selector]) {
    expect(deployment.spec.template.metadata.labels).toMatchObject(selector);
  }

  // Env: every ConfigMap reference exists; the database URL only ever comes from a Secret.
  const configMap = one(objects, 'ConfigMap');
  const env = new Map<string, K8sObject>(container.env.map((e: K8sObject) => [e.name, e]));
  expect(env.size, 'no variable is set twice').toBe(container.env.length);
  for (const entry of container.env) {
    const ref = entry.valueFrom?.configMapKeyRef;
    if (ref) expect(configMap.data, `${entry.name} → ${ref.name}/${ref.key}`).toHaveProperty([ref.key]);
    if (ref) expect(ref.name).toBe(configMap.metadata.name);
  }
  expect(env.get('DATABASE_URL')?.valueFrom?.secretKeyRef).toBeDefined();
  expect(env.has('REDIS_URL')).toBe(true);
  expect(env.has('FAIRWAY_KUBECONFIG'), 'in-cluster: the service account is used').toBe(false);
  expect(
    objects.some((o) => o.kind === 'Secret'),
    'the operator creates the Secret',
  ).toBe(false);
  expect(configMap.data).toMatchObject({
    NODE_ENV: 'production',
    FAIRWAY_DEMO: 'false',
    FAIRWAY_BACKEND: 'kubernetes',
    FAIRWAY_KUBERNETES_SETTINGS: '/etc/fairway/kubernetes.yaml',
  });

  // The settings file is mounted where FAIRWAY_KUBERNETES_SETTINGS points; /tmp and the data dir are
  // writable.
  const mounts = new Map<string, K8sObject>(container.volumeMounts.map((m: K8sObject) => [m.mountPath, m]));
  const volumes = new Map<string, K8sObject>(podSpec.volumes.map((v: K8sObject) => [v.name, v]));
  const settingsPath = path.posix.parse(configMap.data.FAIRWAY_KUBERNETES_SETTINGS);
  const settingsVolume = volumes.get(mounts.get(settingsPath.dir)?.name);
  expect(settingsVolume?.configMap).toEqual({
    name: configMap.metadata.name,
    items: [{ key: settingsPath.base, path: settingsPath.base }],
  });
  for (const writable of ['/tmp', configMap.data.FAIRWAY_DATA_DIR]) {
    expect(volumes.get(mounts.get(writable)?.name)?.emptyDir, writable).toBeDefined();
  }
  // The settings file is one the backend accepts (unknown keys and bad values are refused there).
  expect(() => parseKubernetesSettings(parse(configMap.data['kubernetes.yaml']))).not.toThrow();
}

describe('deploy/kubernetes manifests', () => {
  const objects = manifestObjects();

  it('are valid Kubernetes objects, consistent with each other, least privilege and restricted', () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(
      [
        'ClusterRole',
        'ClusterRoleBinding',
        'ConfigMap',
        'Deployment',
        'Namespace',
        'PodDisruptionBudget',
        'Service',
        'ServiceAccount',
      ].sort(),
    );
    expectConsistentDeployment(objects);
    for (const o of objects.filter(
      (o) => !['Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind),
    )) {
      expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe('fairway-system');
    }
    expect(one(objects, 'Namespace').metadata.labels['pod-security.kubernetes.io/enforce']).toBe(
      'restricted',
    );
    expect(one(objects, 'Deployment').spec.replicas).toBe(2);
  });

  it('carry the example flavor mapping: whole A100s by product label, 1g MIG slices at 7 per GPU', () => {
    const settings = parse(one(objects, 'ConfigMap').data['kubernetes.yaml']);
    expect(settings.flavors).toEqual(
      expect.arrayContaining([
        { flavor: 'a100', resource: 'nvidia.com/gpu', gpuProduct: 'NVIDIA-A100-SXM4-80GB' },
        { flavor: 'a100-mig-1g', resource: 'nvidia.com/mig-1g.10gb', unitsPerGpu: 7 },
      ]),
    );
  });
});

describe('deploy/helm/fairway chart', () => {
  it('renders with default values to the same objects as the plain manifests (apart from names and Helm labels)', () => {
    const rendered: K8sObject[] = renderChartObjects(chartDir, DEFAULT_RELEASE);
    expectConsistentDeployment(rendered);
    const plain = manifestObjects();
    for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget']) {
      expect(one(rendered, kind).spec, kind).toEqual(one(plain, kind).spec);
    }
    const renderedData = { ...one(rendered, 'ConfigMap').data };
    const plainData = { ...one(plain, 'ConfigMap').data };
    expect(parse(renderedData['kubernetes.yaml'])).toEqual(parse(plainData['kubernetes.yaml']));
    delete renderedData['kubernetes.yaml'];
    delete plainData['kubernetes.yaml'];
    expect(renderedData).toEqual(plainData);
    const chart = parse(fs.readFileSync(path.join(chartDir, 'Chart.yaml'), 'utf8'));
    expect(one(rendered, 'Deployment').spec.template.spec.containers[0].image).toBe(
      `registry.example.com/fairway:${chart.appVersion}`,
    );
  });

  it('renders an override: replicas, image, secret, Redis as a value, resources, settings, no PDB', () => {
    const rendered: K8sObject[] = renderChartObjects(chartDir, OVERRIDE);
    expectConsistentDeployment(rendered);
    expect(rendered.some((o) => o.kind === 'PodDisruptionBudget')).toBe(false);
    const deployment = one(rendered, 'Deployment');
    const container = deployment.spec.template.spec.containers[0];
    expect(deployment.spec.replicas).toBe(3);
    expect(container.image).toBe('ghcr.io/acme/fairway:1.2.3');
    expect(container.imagePullPolicy).toBe('Always');
    expect(container.resources).toEqual({
      requests: { cpu: '250m', memory: '512Mi' },
      limits: { cpu: '2', memory: '4Gi' },
    });
    const env = Object.fromEntries(container.env.map((e: K8sObject) => [e.name, e]));
    expect(env.DATABASE_URL.valueFrom.secretKeyRef).toEqual({ name: 'pg-credentials', key: 'url' });
    expect(env.REDIS_URL).toEqual({ name: 'REDIS_URL', value: 'redis://redis.platform:6379' });
    expect(parse(one(rendered, 'ConfigMap').data['kubernetes.yaml'])).toEqual({
      namespacePrefix: 'tenant-',
      flavors: [{ flavor: 'h100', resource: 'nvidia.com/gpu' }],
    });
    expect(one(rendered, 'ClusterRole').metadata.name).toBe('platform-gpu-gateway');
    for (const o of rendered.filter((o) => !['ClusterRole', 'ClusterRoleBinding'].includes(o.kind))) {
      expect(o.metadata.namespace, o.kind).toBe('platform');
    }
  });

  it('renders NOTES.txt', () => {
    const notes = renderChart(chartDir, OVERRIDE).find((f) => f.file === 'templates/NOTES.txt');
    expect(notes?.text).toContain('kubectl -n platform create secret generic pg-credentials');
    expect(notes?.text).not.toContain('{{');
  });
});

describe('chart renderer (test/helpers/chart-render.ts)', () => {
  const scope: TemplateScope = {
    Values: { name: 'x', flag: false, n: 2, big: 1_000_000, block: 'a: 1\nb: 2', map: { k: 'v' } },
    Release: { Name: 'r', Namespace: 'ns' },
    Chart: { Name: 'c', Version: '1', AppVersion: '2' },
  };
  const render = (source: string) => renderTemplate(source, scope, 'inline');

  it('renders the supported subset like Helm', () => {
    expect(render('a: {{ .Values.name | quote }} {{ .Release.Namespace }} {{ .Values.n }}')).toBe(
      'a: "x" ns 2',
    );
    expect(render('data: |{{ .Values.block | nindent 2 }}')).toBe('data: |\n  a: 1\n  b: 2');
    expect(render('a\n{{- if .Values.flag }}\nb\n{{- end }}\nc')).toBe('a\nc');
    expect(render('a\n{{- if .Values.map }}\nb\n{{- end }}\nc')).toBe('a\nb\nc');
    expect(render('{{ .Values.map.k -}}   \n  z')).toBe('vz');
  });

  it.each([
    '{{ include "fairway.labels" . }}',
    '{{ toYaml .Values.map }}',
    '{{ .Values.name | default "y" }}',
    '{{ .Values.name | quote | nindent 2 }}',
    '{{ range .Values.map }}x{{ end }}',
    '{{ if .Values.flag }}a{{ else }}b{{ end }}',
    '{{ if .Values.flag }}a',
    '{{ end }}',
    '{{/* a comment */}}',
    '{{ $x := 1 }}',
    '{{ .Capabilities.KubeVersion.Version }}',
    '{{ .Values.missing }}',
    '{{ .Values.missing.deeper }}',
    '{{ .Values.map }}',
    '{{ .Values.big }}',
    '{{ .Values.n | nindent 2 }}',
    '{{ .Values.name ',
  ])('throws on %s', (source) => {
    expect(() => render(source)).toThrow(ChartSubsetError);
  });

  it('refuses a chart with helper templates', () => {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-chart-'));
    fs.cpSync(chartDir, copy, { recursive: true });
    fs.writeFileSync(path.join(copy, 'templates/_helpers.tpl'), '{{- define "x" }}y{{- end }}');
    try {
      expect(() => renderChart(copy)).toThrow(ChartSubsetError);
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  });
});

/** Dockerfile instructions, continuation lines joined, comments dropped. */
function dockerInstructions(): { op: string; args: string }[] {
  const text = fs.readFileSync(path.join(root, 'deploy/Dockerfile'), 'utf8');
  return text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [, op = '', args = ''] = /^\s*(\S+)\s*(.*)$/.exec(line) ?? [];
      return { op: op.toUpperCase(), args: args.trim() };
    });
}

/** Relative and package imports a file makes at run time (`import type` is erased, so skipped). */
function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specifiers: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isImportDeclaration(node) &&
      !node.importClause?.isTypeOnly &&
      ts.isStringLiteral(node.moduleSpecifier)
    )
      specifiers.push(node.moduleSpecifier.text);
    if (
      ts.isExportDeclaration(node) &&
      !node.isTypeOnly &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    )
      specifiers.push(node.moduleSpecifier.text);
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    )
      specifiers.push(node.arguments[0].text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers;
}

describe('deploy/Dockerfile', () => {
  const instructions = dockerInstructions();
  const stages = instructions.filter((i) => i.op === 'FROM');
  const lastFrom = instructions.lastIndexOf(stages[stages.length - 1]!);
  const runtime = instructions.slice(lastFrom);

  it('is multi-stage on node:20-bookworm-slim and ends as a non-root user running tsx src/main.ts', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage.args).toMatch(/^node:20-bookworm-slim\b/);
    const build = instructions
      .slice(0, lastFrom)
      .map((i) => i.args)
      .join('\n');
    expect(build).toMatch(/python3/);
    expect(build).toMatch(/npm prune --omit=dev/);
    const users = runtime.filter((i) => i.op === 'USER');
    expect(users.length).toBeGreaterThan(0);
    const user = users[users.length - 1]!.args;
    expect(user.split(':')[0]).not.toMatch(/^(0|root)$/);
    expect(user).toBe('1000:1000');
    expect(runtime.some((i) => i.op === 'COPY' && /--from=build\s+\/app\/node_modules/.test(i.args))).toBe(
      true,
    );
    expect(runtime.some((i) => i.op === 'ENV' && /\bNODE_ENV=production\b/.test(i.args))).toBe(true);
    expect(runtime.some((i) => i.op === 'EXPOSE' && i.args === '4000')).toBe(true);
    expect(runtime[runtime.length - 1]).toEqual({
      op: 'CMD',
      args: '["node_modules/.bin/tsx", "src/main.ts"]',
    });
  });

  it('copies every file the server and the CLI import, and .dockerignore lets each copied path through', () => {
    const copied = runtime
      .filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    const ignore = fs.readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n');
    expect(ignore).toContain('*');
    for (const source of copied) {
      expect(fs.existsSync(path.join(root, source)), source).toBe(true);
      expect(
        ignore.some((line) => line === `!${source}` || line === `!${source}/`),
        `.dockerignore lets ${source} through`,
      ).toBe(true);
    }
    const copiedDirs = copied.map((s) => path.join(root, s));
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    const seen = new Set<string>();
    const queue = [path.join(root, 'src/main.ts'), path.join(root, 'bin/fairway.js')];
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      expect(
        copiedDirs.some((d) => file === d || file.startsWith(d + path.sep)),
        `${path.relative(root, file)} is in the image`,
      ).toBe(true);
      for (const spec of runtimeImports(file)) {
        if (spec.startsWith('.')) {
          const target = path.resolve(path.dirname(file), spec);
          const resolved = [target.replace(/\.js$/, '.ts'), target].find((f) => fs.existsSync(f));
          expect(resolved, `${path.relative(root, file)} imports ${spec}`).toBeDefined();
          queue.push(resolved!);
        } else if (!spec.startsWith('node:') && !builtinModules.includes(spec)) {
          const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
          // Dev dependencies are pruned from the image: a run-time import of one breaks it.
          expect(
            pkg.dependencies,
            `${path.relative(root, file)} imports ${name}, which must be a dependency`,
          ).toHaveProperty([name]);
        }
      }
    }
    expect(seen.size).toBeGreaterThan(50);
  });
});
