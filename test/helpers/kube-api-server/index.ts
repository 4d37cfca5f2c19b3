/**
 * A Kubernetes API server for tests: enough of the REST + watch protocol for
 * @kubernetes/client-node 1.4.0 to work against it unmodified, every write validated with
 * kubernetes-models, and a small Job controller / scheduler / kubelet so Jobs actually run.
 * See test/backends/kubernetes/test-api-server.test.ts for what it is checked to do.
 *
 * Behaviour worth knowing (as on a real cluster unless said otherwise):
 * - list items carry no apiVersion/kind; watch event objects do;
 * - deleting a Job without propagationPolicy orphans its pods (batch/v1's default): pass 'Background';
 * - a namespaced object can only be created in an existing Namespace ('default' and 'kube-system' exist);
 * - unknown fields are refused (422), like fieldValidation=Strict (client-node's own serializer already
 *   drops fields its models do not know, so this mostly guards plain-JSON writes);
 * - a Job's pod template is immutable once started; while suspended (the controller clears
 *   status.startTime then) labels, annotations, nodeSelector, tolerations, affinity may change;
 * - ResourceQuota: pods beyond `hard` are not created (see controllerProblems); status.used is kept;
 * - server-side apply does not model conflicts between field managers (every apply acts as force=true);
 *   fields a manager applied before and leaves out now are removed; lists are replaced whole;
 * - deletion is immediate (no graceful termination, no finalizers); a pod bound to a deleted Node is deleted;
 * - after dropWatches()/setDown(true), client-node's informer emits 'error' ("Premature close") and
 *   does NOT restart by itself: the caller must start() it again (it resumes from its resourceVersion);
 * - a Job's pod deleted from outside while active counts as a failure of the Job;
 * - a watch without resourceVersion starts with synthetic ADDED events for the current objects.
 */
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { stringify as toYaml } from 'yaml';
import { Controllers, type KubeletOptions } from './controllers.js';
import { createApiHttpServer, type ServerState, TEST_TOKEN, type WriteRecord } from './server.js';
import { Store } from './store.js';
import { Watches } from './watch.js';

export type { KubeletOptions } from './controllers.js';
export { ANNOTATION_OUTCOME, ANNOTATION_RUN_MS } from './controllers.js';
export type { WriteRecord } from './server.js';
export { TEST_TOKEN } from './server.js';

export interface KubeApiServerOptions {
  /** Validate every stored object with kubernetes-models (and refuse unknown fields). Default true. */
  validate?: boolean;
  /** false: pods are created and scheduled but never start. Default: { startDelayMs: 20 }. */
  kubelet?: KubeletOptions | false;
  /** Events kept for watch resume; a watch from an older resourceVersion gets 410. Default 1000. */
  watchHistory?: number;
}

export interface KubeApiServer {
  /** http://127.0.0.1:<port> */
  url: string;
  /** A kubeconfig pointing at url (bearer token 'test-token', plain http). */
  kubeconfigYaml: string;
  writeKubeconfig(path: string): void;
  /** Every write through HTTP the server accepted or refused, in order. */
  writes: WriteRecord[];
  /** Validation failures seen (each also answered with 422, or kept from the controllers' own writes). */
  invalid: { kind: string; name: string; errors: string }[];
  /** Writes the controllers could not make (a pod refused by a ResourceQuota, an invalid pod), newest last.
   *
   */
  controllerProblems: string[];
  /** Current objects of a kind (deep copies, with apiVersion and kind), optionally of one namespace. */
  objects(kind: string, namespace?: string): any[];
  get(kind: string, namespace: string | undefined, name: string): any | undefined;
  /**
   * Creates or replaces an object as an operator would (validated too; throws on an invalid one).
   * Unlike a client's write it sets status as given (a Node's allocatable, say). Returns the stored copy.
   */
  put(obj: any): any;
  /** Deletes an object (dependents deleted in the background); throws if there is none. */
  remove(kind: string, namespace: string | undefined, name: string): void;
  /** Ends every open watch with a 410 Expired ERROR event and forgets history, so clients must relist. */
  expireWatches(): void;
  /** Drops open watch connections without an event (a network cut). */
  dropWatches(): void;
  /** Makes every request fail with 503 (and cuts open watches) until setDown(false). */
  setDown(down: boolean): void;
  /** Count of HTTP requests served (including refused ones). */
  readonly requests: number;
  /** Open watch streams right now. */
  readonly openWatches: number;
  close(): Promise<void>;
}

export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const store = new Store(options.validate ?? true, options.watchHistory ?? 1000);
  for (const name of ['default', 'kube-system'])
    store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, 'system');
  const watches = new Watches(store);
  const state: ServerState = { store, watches, writes: [], requests: 0, down: false, applied: new Map() };
  const kubelet = options.kubelet === false ? false : { startDelayMs: 20, ...options.kubelet };
  const controllers = new Controllers(store, kubelet);
  const http = createApiHttpServer(state);
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const kubeconfigYaml = toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    // client-node refuses plain http unless TLS verification is (nominally) skipped.
    clusters: [{ name: 'test', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'test', user: { token: TEST_TOKEN } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: 'test', namespace: 'default' } }],
    'current-context': 'test',
  });

  return {
    url,
    kubeconfigYaml,
    writeKubeconfig: (path) => writeFileSync(path, kubeconfigYaml),
    writes: state.writes,
    invalid: store.invalid,
    controllerProblems: controllers.problems,
    objects: (kind, namespace) => store.list(kind, namespace),
    get: (kind, namespace, name) => store.get(kind, namespace, name),
    put: (obj) => {
      const namespace = store.type(obj.kind).namespaced ? obj.metadata?.namespace : undefined;
      const existing = store.get(obj.kind, namespace, obj.metadata?.name);
      if (!existing) return store.create(obj, 'system');
      const { resourceVersion: _ignored, ...metadata } = obj.metadata;
      return store.replace({ ...obj, metadata }, 'system');
    },
    remove: (kind, namespace, name) => void store.delete(kind, namespace, name, 'Background'),
    expireWatches: () => {
      watches.expireAll();
      store.compact();
    },
    dropWatches: () => watches.dropAll(),
    setDown: (down) => {
      state.down = down;
      if (down) watches.dropAll();
    },
    get requests() {
      return state.requests;
    },
    get openWatches() {
      return watches.count;
    },
    close: async () => {
      controllers.close();
      watches.dropAll();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
