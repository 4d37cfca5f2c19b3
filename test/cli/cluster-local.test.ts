// `npm run cluster:local` as a person runs it: a process serving the test API server on the port
// asked, with the nodes asked and the shared CRDs, answering plain HTTP the way kubectl asks
// (discovery, lists), and writing a kubeconfig that points at it and settings with the demo's
// flavors; a bad --nodes is refused with exit code 2.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { crdDirectory } from '../helpers/crd-dir.js';
import { freePort } from '../helpers/process.js';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGTERM');
});

function run(args: string[]): { child: ChildProcess; output: Promise<string>; exit: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/tools/cluster-local.ts', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let text = '';
  child.stdout!.on('data', (d) => (text += d));
  child.stderr!.on('data', (d) => (text += d));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const output = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start line: ${text}`)), 30_000);
    child.stdout!.on('data', () => {
      if (text.includes('kubeconfig:')) {
        clearTimeout(timer);
        resolve(text);
      }
    });
    void exit.then(() => {
      clearTimeout(timer);
      resolve(text);
    });
  });
  return { child, output, exit };
}

describe('npm run cluster:local', () => {
  it('serves nodes and CRDs on the port asked, with a kubeconfig and the demo’s flavors', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-local-'));
    const port = await freePort();
    const kubeconfig = path.join(dir, 'kubeconfig');
    const settings = path.join(dir, 'settings.yaml');
    const { output } = run([
      '--port',
      String(port),
      '--nodes',
      '2x8:h100,1x56:a100-mig',
      '--crds',
      crdDirectory(),
      '--kubeconfig',
      kubeconfig,
      '--settings',
      settings,
    ]);
    expect(await output).toContain(`http://127.0.0.1:${port}`);
    const config = parseYaml(fs.readFileSync(kubeconfig, 'utf8'));
    expect(config.clusters[0].cluster.server).toBe(`http://127.0.0.1:${port}`);
    const token = config.users[0].user.token;
    const get = async (p: string) =>
      (await fetch(`http://127.0.0.1:${port}${p}`, { headers: { authorization: `Bearer ${token}` } })).json();
    const nodes = (await get('/api/v1/nodes')) as any;
    expect(
      nodes.items
        .map(
          (n: any) =>
            n.status.allocatable['nvidia.com/gpu'] ?? n.status.allocatable['nvidia.com/mig-1g.10gb'],
        )
        .sort(),
    ).toEqual(['56', '8', '8']);
    const groups = ((await get('/apis')) as any).groups.map((g: any) => g.name);
    expect(groups).toEqual(expect.arrayContaining(['batch', 'jobset.x-k8s.io', 'kubeflow.org', 'ray.io']));
    expect(((await get('/apis/jobset.x-k8s.io/v1alpha2/jobsets')) as any).items).toEqual([]);
    const flavors = parseYaml(fs.readFileSync(settings, 'utf8'))
      .flavors.map((f: any) => f.flavor)
      .sort();
    expect(flavors).toEqual(['a100-1g.10gb', 'h100-80g']);
  }, 60_000);

  it('refuses a --nodes it cannot read with exit code 2 and says why', async () => {
    const { output, exit } = run(['--nodes', '4x8', '--kubeconfig', '/dev/null', '--settings', '/dev/null']);
    expect(await exit).toBe(2);
    expect(await output).toMatch(/--nodes: "4x8" is not COUNTxGPUS:MODEL/);
  }, 60_000);
});
