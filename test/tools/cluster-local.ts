// `npm run cluster:local`: the test Kubernetes API server on its own, for trying the Kubernetes
// backend without a cluster (and for outside checks with plain HTTP or kubectl). It serves the
// usual REST paths for every kind it holds, with GPU nodes as the NVIDIA device plugin labels
// them, writes a kubeconfig and a Kubernetes settings file whose flavors are the demo's, and runs
// until interrupted:
//
//   npm run cluster:local -- --port 6443 --nodes 4x8:h100,1x56:a100-mig \
//     --kubeconfig /tmp/kubeconfig --settings /tmp/kubernetes.yaml
//   FAIRWAY_BACKEND=kubernetes FAIRWAY_KUBECONFIG=/tmp/kubeconfig \
//     FAIRWAY_KUBERNETES_SETTINGS=/tmp/kubernetes.yaml npm start
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { startKubeApiServer } from '../helpers/kube-api-server/index.js';
import { gpuNode, TEST_KUBE_SETTINGS } from '../helpers/kube-app.js';

const USAGE = `usage: npm run cluster:local -- --kubeconfig FILE --settings FILE [--port P] [--nodes SPEC] [--crds DIR] [--scoring first-fit|least-allocated|most-allocated]
  --nodes   comma-separated COUNTxGPUS:MODEL, MODEL h100 (whole GPUs) or a100-mig (1g.10gb slices); default 4x8:h100
  --crds    a folder of CustomResourceDefinition YAML files to serve (e.g. ../shared/kubernetes/crds)`;

const MODELS = new Set(['h100', 'a100-mig']);

interface NodeSpec {
  count: number;
  gpus: number;
  model: string;
}

export function parseNodes(spec: string): NodeSpec[] {
  return spec.split(',').map((part) => {
    const m = /^(\d+)x(\d+):([a-z0-9-]+)$/.exec(part.trim());
    if (!m || !MODELS.has(m[3]!) || Number(m[1]) < 1 || Number(m[2]) < 1)
      throw new Error(
        `--nodes: "${part}" is not COUNTxGPUS:MODEL with MODEL one of ${[...MODELS].join(', ')}`,
      );
    return { count: Number(m[1]), gpus: Number(m[2]), model: m[3]! };
  });
}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '0' },
      nodes: { type: 'string', default: '4x8:h100' },
      crds: { type: 'string' },
      kubeconfig: { type: 'string' },
      settings: { type: 'string' },
      scoring: { type: 'string', default: 'least-allocated' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void console.log(USAGE);
  if (!values.kubeconfig || !values.settings)
    throw new Error(`--kubeconfig and --settings are required\n${USAGE}`);
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port: "${values.port}" is not a port`);
  const scoring = values.scoring as 'first-fit' | 'least-allocated' | 'most-allocated';
  if (!['first-fit', 'least-allocated', 'most-allocated'].includes(scoring))
    throw new Error(`--scoring: "${values.scoring}" is not first-fit, least-allocated or most-allocated`);
  const nodes = parseNodes(values.nodes!);
  const server = await startKubeApiServer({
    port,
    scoring,
    ...(values.crds ? { crds: values.crds } : {}),
    // Pods run until deleted unless their workload says otherwise (a `sleep N` placeholder runs N s).
    kubelet: { startDelayMs: 500, sleepCommands: true },
  });
  let i = 0;
  for (const { count, gpus, model } of nodes)
    for (let k = 0; k < count; k++)
      server.put(gpuNode(`gpu-${model}-${++i}`, model === 'a100-mig' ? { mig: gpus } : { gpus }));
  server.writeKubeconfig(values.kubeconfig);
  // The demo's flavors and pool label; everything else at the backend's defaults (not the tests' short ones).
  fs.writeFileSync(
    values.settings,
    toYaml({ poolLabel: TEST_KUBE_SETTINGS.poolLabel, flavors: TEST_KUBE_SETTINGS.flavors }),
  );
  console.log(`test Kubernetes API server at ${server.url} with ${i} node(s)`);
  console.log(`kubeconfig: ${values.kubeconfig}\nsettings:   ${values.settings}`);
  console.log(
    `try: FAIRWAY_BACKEND=kubernetes FAIRWAY_KUBECONFIG=${values.kubeconfig} FAIRWAY_KUBERNETES_SETTINGS=${values.settings} npm start`,
  );
  const stop = async () => {
    await server.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(2);
});
