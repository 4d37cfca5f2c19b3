// The Kubernetes API as the backend uses it: idempotent writes (server-side apply, create that
// accepts an existing object, delete that accepts a missing one), retries of transient failures,
// and informers (list + watch) that relist after 410 Gone and restart with backoff after errors.
import {
  type Informer,
  KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  KubernetesObjectApi,
  makeInformer,
  type ObjectCache,
  PatchStrategy,
} from '@kubernetes/client-node';

/** The field manager of every write: `kubectl get … --show-managed-fields` says "fairway". */
export const FIELD_MANAGER = 'fairway';

export interface KubeconfigSource {
  /** A kubeconfig file; without it: in-cluster when running in a pod, else $KUBECONFIG or ~/.kube/config. */
  kubeconfigPath?: string;
}

export function loadKubeConfig(source: KubeconfigSource, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const kc = new KubeConfig();
  if (source.kubeconfigPath) kc.loadFromFile(source.kubeconfigPath);
  else if (env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}

/** The HTTP status of a failed API call (client-node's ApiException), or undefined for network errors. */
export function statusOf(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The API server's own message from a refused call (its Status body), or the error's. */
export function apiMessage(error: unknown): string {
  const body = (error as { body?: unknown }).body;
  try {
    const status =
      typeof body === 'string'
        ? (JSON.parse(body) as { message?: string })
        : (body as { message?: string } | undefined);
    if (status?.message) return status.message.slice(0, 300);
  } catch {
    // not JSON: fall back to the error's message
  }
  return error instanceof Error ? error.message.slice(0, 300) : String(error).slice(0, 300);
}

function transient(error: unknown): boolean {
  const status = statusOf(error);
  // No status: the connection failed. 429 and 5xx: the API server is busy or briefly down.
  return status === undefined || status === 429 || status >= 500;
}

/** Kind, namespace and name: what identifies an object. */
export type ObjectRef = Pick<KubernetesObject, 'apiVersion' | 'kind'> & {
  metadata: { name: string; namespace?: string };
};

export interface KubeClientOptions {
  /** Attempts per write before the error goes to the caller (the outbox retries later). Default 3. */
  attempts?: number;
  /**
   * One call's limit: a connection that a firewall forgot never answers, and the leader's work
   * must not wait on it forever. Default 10 s.
   */
  requestTimeoutMs?: number;
  /** First retry delay; doubles per attempt. Default 100 ms. */
  retryDelayMs?: number;
  /** Called after each accepted write (tests and the bench count them). */
  onWrite?: (verb: 'apply' | 'create' | 'patch' | 'delete', ref: ObjectRef) => void;
}

export class KubeClient {
  readonly api: KubernetesObjectApi;
  private readonly attempts: number;
  private readonly retryDelayMs: number;
  readonly requestTimeoutMs: number;

  constructor(
    readonly kubeConfig: KubeConfig,
    private readonly options: KubeClientOptions = {},
  ) {
    this.api = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.attempts = options.attempts ?? 3;
    this.retryDelayMs = options.retryDelayMs ?? 100;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  }

  /** Server-side apply: creates or updates to exactly these fields; repeating it changes nothing. */
  async apply<T extends KubernetesObject>(object: T): Promise<T> {
    const out = await this.retrying(() =>
      this.api.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
    );
    this.options.onWrite?.('apply', object as ObjectRef);
    return out;
  }

  /** Creates the object; one that exists already (a retry, a restart) is read and returned instead. */
  async createOrGet<T extends KubernetesObject>(object: T): Promise<{ object: T; created: boolean }> {
    try {
      const created = await this.retrying(() => this.api.create(object, undefined, undefined, FIELD_MANAGER));
      this.options.onWrite?.('create', object as ObjectRef);
      return { object: created, created: true };
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
      return { object: (await this.read(object as ObjectRef)) as T, created: false };
    }
  }

  /** A JSON merge patch (RFC 7386): maps merge, lists are replaced, null removes a key. */
  async mergePatch<T extends KubernetesObject>(ref: ObjectRef, patch: Record<string, unknown>): Promise<T> {
    const body = {
      ...patch,
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: {
        ...((patch.metadata as object) ?? {}),
        name: ref.metadata.name,
        namespace: ref.metadata.namespace,
      },
    };
    const out = await this.retrying(() =>
      this.api.patch(
        body as KubernetesObject,
        undefined,
        undefined,
        FIELD_MANAGER,
        undefined,
        PatchStrategy.MergePatch,
      ),
    );
    this.options.onWrite?.('patch', ref);
    return out as T;
  }

  /** Deletes the object and (Background) what it owns; an object already gone is not an error. */
  async deleteIfPresent(
    ref: ObjectRef,
    propagationPolicy: 'Background' | 'Foreground' = 'Background',
  ): Promise<boolean> {
    try {
      await this.retrying(() =>
        this.api.delete(
          ref as KubernetesObject,
          undefined,
          undefined,
          undefined,
          undefined,
          propagationPolicy,
        ),
      );
      this.options.onWrite?.('delete', ref);
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw error;
    }
  }

  /**
   * Whether the cluster serves this kind (discovery of its group version; a served kind is
   * remembered, a missing one asked again next time, so a CRD installed later is seen).
   */
  async serves(apiVersion: string, kind: string): Promise<boolean> {
    try {
      // client-node keeps its discovery protected; it is the same call its generic methods make.
      const api = this.api as unknown as { resource(v: string, k: string): Promise<unknown> };
      return (await this.retrying(() => api.resource(apiVersion, kind))) !== undefined;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw error;
    }
  }

  async read<T extends KubernetesObject>(ref: ObjectRef): Promise<T | undefined> {
    try {
      return (await this.retrying(() => this.api.read(ref as never))) as T;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async list<T extends KubernetesObject>(
    apiVersion: string,
    kind: string,
    labelSelector: string,
    namespace?: string,
  ): Promise<T[]> {
    const out = (await this.retrying(() =>
      this.api.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, labelSelector),
    )) as KubernetesListObject<T>;
    return out.items;
  }

  private async retrying<T>(call: () => Promise<T>): Promise<T> {
    let delay = this.retryDelayMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await withTimeout(call(), this.requestTimeoutMs);
      } catch (error) {
        if (attempt >= this.attempts || !transient(error)) throw error;
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay *= 2;
      }
    }
  }
}

/** The call's answer, or a (transient) error once `ms` passed without one. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the Kubernetes API did not answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** An error from aborting a request on purpose (a watch this side stopped). */
function aborted(error: unknown): boolean {
  const e = error as { name?: string; type?: string } | null;
  return e?.name === 'AbortError' || e?.type === 'aborted';
}

export interface WatchOptions<T extends KubernetesObject> {
  /** The watch path, e.g. `/apis/batch/v1/jobs` (all namespaces). */
  path: string;
  list: () => Promise<KubernetesListObject<T>>;
  labelSelector?: string;
  onChange: (object: T) => void;
  onDelete: (object: T) => void;
  /** An error streak began (logged once) or ended. */
  onHealth?: (healthy: boolean, error?: unknown) => void;
  /** Backoff after an error: starts here and doubles up to maxBackoffMs. Defaults 200 ms, 30 s. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** The list call's limit (see KubeClientOptions.requestTimeoutMs). Default 10 s. */
  listTimeoutMs?: number;
  /**
   * The watch is started again this often (from the resource version it reached: no relist).
   * client-node 1.4.0 puts no timeout on a watch, so a connection that died without a word
   * would otherwise be watched forever, as client-go avoids with its watch timeouts. Default 5 min.
   */
  restartEveryMs?: number;
}

/**
 * An informer that keeps itself alive. client-node's informer relists by itself after a 410
 * (the resource version it watched from expired) and reconnects when a watch ends, but stops
 * for good on any other error: this one starts it again with exponential backoff.
 */
export class ResilientInformer<T extends KubernetesObject> {
  private readonly informer: Informer<T> & ObjectCache<T>;
  private stopped = false;
  private backoffMs: number;
  private timer: NodeJS.Timeout | null = null;
  private healthy = true;
  private everSynced = false;
  private syncWaiters: (() => void)[] = [];
  private readonly restartTimer: NodeJS.Timeout;

  constructor(
    kubeConfig: KubeConfig,
    private readonly options: WatchOptions<T>,
  ) {
    this.backoffMs = options.minBackoffMs ?? 200;
    const listTimeoutMs = options.listTimeoutMs ?? 10_000;
    this.informer = makeInformer(
      kubeConfig,
      options.path,
      () => withTimeout(options.list(), listTimeoutMs),
      options.labelSelector,
    );
    this.restartTimer = setInterval(() => this.restart(), options.restartEveryMs ?? 300_000);
    this.restartTimer.unref();
    this.informer.on('add', options.onChange);
    this.informer.on('update', options.onChange);
    this.informer.on('delete', options.onDelete);
    this.informer.on('error', (error) => this.failed(error));
  }

  /** Starts listing and watching; resolves when the first list has landed in the cache. */
  async start(): Promise<void> {
    void this.run();
    await this.synced();
  }

  synced(): Promise<void> {
    if (this.everSynced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  list(namespace?: string): readonly T[] {
    return this.informer.list(namespace);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.informer.get(name, namespace);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.restartTimer);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.informer.stop();
  }

  /**
   * Stops the watch (its abort error is ignored) and starts it again a moment later, when the
   * aborted request has finished with the informer (it clears the informer's current request).
   */
  private restart(): void {
    if (this.stopped) return;
    void this.informer.stop().then(() => {
      const again = setTimeout(() => void this.run(), 20);
      again.unref();
    });
  }

  private async run(): Promise<void> {
    if (this.stopped) return;
    let failed = false;
    const onError = (error: unknown) => {
      if (!aborted(error)) failed = true;
    };
    this.informer.on('error', onError);
    try {
      await this.informer.start();
    } catch (error) {
      failed = true;
      this.failed(error);
    } finally {
      this.informer.off('error', onError);
    }
    if (failed || this.stopped) return;
    this.backoffMs = this.options.minBackoffMs ?? 200;
    if (!this.healthy) this.options.onHealth?.(true);
    this.healthy = true;
    if (!this.everSynced) {
      this.everSynced = true;
      for (const resolve of this.syncWaiters.splice(0)) resolve();
    }
  }

  private failed(error: unknown): void {
    if (this.stopped || aborted(error)) return;
    if (this.healthy) this.options.onHealth?.(false, error);
    this.healthy = false;
    if (this.timer) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.options.maxBackoffMs ?? 30_000);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.restart();
    }, delay);
    this.timer.unref();
  }
}
