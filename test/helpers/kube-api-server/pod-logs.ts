/**
 * Pod logs as a node keeps them and the API server serves them (GET /api/v1/namespaces/{ns}/pods/{name}/log):
 * one log per container of a pod object (by uid: a new pod of the same name has a new log), gone with the
 * pod. Each write is stamped once, as a container runtime stamps what it reads in one go, so the lines of
 * one write share a timestamp (RFC 3339 with nine fraction digits, kubelet's fixed format; writes get
 * increasing ones). Query parameters as the real server takes them: container (required when the pod has
 * several; 400 for one it does not have), timestamps, follow (new lines streamed until the container ends,
 * the pod goes, or `cut()`), sinceTime / sinceSeconds (not both), tailLines, limitBytes; previous is not
 * kept (400). A pod not on a node yet has an empty log; a container on a node that has not started is
 * 400 "is waiting to start", as the kubelet says.
 */
import type { ServerResponse } from 'node:http';
import { ApiError, notFound, typeByKind } from './resources.js';
import type { Store } from './store.js';

interface Entry {
  /** Nanoseconds since the epoch. */
  ns: bigint;
  stamp: string;
  bytes: Buffer;
}

interface Follower {
  res: ServerResponse;
  write(entries: Entry[]): void;
}

interface ContainerLog {
  entries: Entry[];
  running: boolean;
  followers: Set<Follower>;
}

const podType = typeByKind('Pod')!;

function stampOf(ns: bigint): string {
  const ms = Number(ns / 1_000_000n);
  return `${new Date(ms).toISOString().slice(0, 19)}.${String(ns % 1_000_000_000n).padStart(9, '0')}Z`;
}

/** Now, in ns: the ms clock plus the sub-ms part of the monotonic one (so stamps differ within a ms). */
function nowNs(): bigint {
  const subMs = Math.floor((performance.now() % 1) * 1e6);
  return BigInt(Date.now()) * 1_000_000n + BigInt(subMs);
}

const badRequest = (message: string) => new ApiError(400, 'BadRequest', message);
const invalidOption = (message: string) =>
  new ApiError(422, 'Invalid', `PodLogOptions is invalid: ${message}`);

export class PodLogs {
  /** Pod uid → container name → its log. */
  private readonly logs = new Map<string, Map<string, ContainerLog>>();
  /** Open follows → what forgets them. */
  private readonly open = new Map<ServerResponse, () => void>();
  private lastNs = 0n;

  constructor(private readonly store: Store) {
    store.subscribe((e) => {
      if (e.kind === 'Pod' && e.type === 'DELETED') this.forget(e.object.metadata.uid);
    });
  }

  /** Log streams open now. */
  get streams(): number {
    return this.open.size;
  }

  private log(uid: string, container: string): ContainerLog {
    let byContainer = this.logs.get(uid);
    if (!byContainer) this.logs.set(uid, (byContainer = new Map()));
    let log = byContainer.get(container);
    if (!log) byContainer.set(container, (log = { entries: [], running: false, followers: new Set() }));
    return log;
  }

  running(pod: any, container: string): boolean {
    return this.logs.get(pod.metadata.uid)?.get(container)?.running ?? false;
  }

  /** The container (re)started: followers may attach. */
  started(pod: any, container: string): void {
    this.log(pod.metadata.uid, container).running = true;
  }

  /**
   * Appends to a container's log: the data split at newlines (a trailing newline ends the last line),
   * every line of this one write stamped alike. Raw bytes are kept as they are (invalid UTF-8 too).
   */
  write(pod: any, container: string, data: string | Buffer): void {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const parts: Buffer[] = [];
    let from = 0;
    for (let nl = bytes.indexOf(10); nl !== -1; nl = bytes.indexOf(10, from)) {
      parts.push(bytes.subarray(from, nl));
      from = nl + 1;
    }
    if (from < bytes.length) parts.push(bytes.subarray(from));
    if (parts.length === 0) return;
    let ns = nowNs();
    if (ns <= this.lastNs) ns = this.lastNs + 1n;
    this.lastNs = ns;
    const stamp = stampOf(ns);
    const log = this.log(pod.metadata.uid, container);
    const entries = parts.map((part) => ({ ns, stamp, bytes: Buffer.from(part) }));
    log.entries.push(...entries);
    for (const f of log.followers) f.write(entries);
  }

  /** The container ended: its followed streams end (with everything it wrote). */
  ended(pod: any, container: string): void {
    const log = this.log(pod.metadata.uid, container);
    log.running = false;
    for (const f of [...log.followers]) f.res.end();
    log.followers.clear();
  }

  /** The pod is gone, and its logs with it. */
  private forget(uid: string): void {
    for (const log of this.logs.get(uid)?.values() ?? []) for (const f of log.followers) f.res.end();
    this.logs.delete(uid);
  }

  /** Cuts every open log stream without an end (a network cut); returns how many. */
  cut(): number {
    const all = [...this.open];
    for (const [res, forget] of all) {
      forget();
      res.destroy();
    }
    return all.length;
  }

  /** Serves GET …/pods/{name}/log; throws ApiError for what the real server refuses. */
  serve(res: ServerResponse, namespace: string, name: string, query: URLSearchParams): void {
    const pod = this.store.peek('Pod', namespace, name);
    if (!pod) throw notFound(podType, name);
    const names = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map(
      (c: any) => c.name as string,
    );
    let container = query.get('container');
    if (!container) {
      if (names.length !== 1)
        throw badRequest(
          `a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`,
        );
      container = names[0]!;
    } else if (!names.includes(container))
      throw badRequest(`container ${container} is not valid for pod ${name}`);
    const options = parseOptions(query);
    if (options.previous)
      throw badRequest(`previous terminated container "${container}" in pod "${name}" not found`);
    if (!pod.spec?.nodeName) {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      return void res.end();
    }
    const status = [
      ...(pod.status?.initContainerStatuses ?? []),
      ...(pod.status?.containerStatuses ?? []),
    ].find((s: any) => s.name === container);
    const everRan = status?.state?.running || status?.state?.terminated || status?.lastState?.terminated;
    if (!everRan) {
      const reason = status?.state?.waiting?.reason ?? 'ContainerCreating';
      const why = /ErrImagePull|ImagePullBackOff/.test(reason) ? 'trying and failing to pull image' : reason;
      throw badRequest(`container "${container}" in pod "${name}" is waiting to start: ${why}`);
    }
    const log = this.log(pod.metadata.uid, container);
    let entries = log.entries;
    const since =
      options.sinceTime !== undefined
        ? options.sinceTime
        : options.sinceSeconds !== undefined
          ? nowNs() - BigInt(options.sinceSeconds) * 1_000_000_000n
          : undefined;
    if (since !== undefined) entries = entries.filter((e) => e.ns >= since);
    if (options.tailLines !== undefined)
      entries = entries.slice(Math.max(0, entries.length - options.tailLines));
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' });
    let budget = options.limitBytes ?? Infinity;
    const write = (batch: Entry[]): boolean => {
      const chunk = Buffer.concat(
        batch.flatMap((e) => [
          ...(options.timestamps ? [Buffer.from(`${e.stamp} `)] : []),
          e.bytes,
          Buffer.from('\n'),
        ]),
      );
      const sent = chunk.length <= budget ? chunk : chunk.subarray(0, budget);
      budget -= sent.length;
      if (sent.length) res.write(sent);
      return budget > 0;
    };
    const more = entries.length === 0 || write(entries);
    if (!options.follow || !log.running || !more) return void res.end();
    const follower: Follower = {
      res,
      write: (batch) => {
        if (!write(batch)) {
          log.followers.delete(follower);
          res.end();
        }
      },
    };
    const forget = () => {
      this.open.delete(res);
      log.followers.delete(follower);
    };
    this.open.set(res, forget);
    log.followers.add(follower);
    res.on('close', forget);
  }
}

interface LogOptions {
  follow: boolean;
  timestamps: boolean;
  previous: boolean;
  sinceTime?: bigint;
  sinceSeconds?: number;
  tailLines?: number;
  limitBytes?: number;
}

function bool(query: URLSearchParams, key: string): boolean {
  const v = query.get(key);
  if (v === null || v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw badRequest(`${key}: invalid value "${v}": expected true or false`);
}

function int(query: URLSearchParams, key: string): number | undefined {
  const v = query.get(key);
  if (v === null) return undefined;
  if (!/^-?\d+$/.test(v)) throw badRequest(`${key}: invalid value "${v}": expected an integer`);
  return Number(v);
}

function parseOptions(query: URLSearchParams): LogOptions {
  const options: LogOptions = {
    follow: bool(query, 'follow'),
    timestamps: bool(query, 'timestamps'),
    previous: bool(query, 'previous'),
  };
  const tailLines = int(query, 'tailLines');
  if (tailLines !== undefined && tailLines < 0)
    throw invalidOption(`tailLines: Invalid value: ${tailLines}: must be greater than or equal to 0`);
  const limitBytes = int(query, 'limitBytes');
  if (limitBytes !== undefined && limitBytes < 1)
    throw invalidOption(`limitBytes: Invalid value: ${limitBytes}: must be greater than 0`);
  const sinceSeconds = int(query, 'sinceSeconds');
  if (sinceSeconds !== undefined && sinceSeconds < 1)
    throw invalidOption(`sinceSeconds: Invalid value: ${sinceSeconds}: must be greater than 0`);
  const rawSince = query.get('sinceTime');
  if (rawSince !== null && sinceSeconds !== undefined)
    throw invalidOption('at most one of sinceTime or sinceSeconds may be specified');
  if (rawSince !== null) {
    // metav1.Time: RFC 3339 to the second (a fraction is accepted and dropped, as the real decoder does).
    const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(rawSince)
      ? Date.parse(rawSince)
      : Number.NaN;
    if (Number.isNaN(ms)) throw badRequest(`sinceTime: invalid value "${rawSince}": expected RFC 3339`);
    options.sinceTime = BigInt(Math.floor(ms / 1000)) * 1_000_000_000n;
  }
  return {
    ...options,
    ...(tailLines !== undefined ? { tailLines } : {}),
    ...(limitBytes !== undefined ? { limitBytes } : {}),
    ...(sinceSeconds !== undefined ? { sinceSeconds } : {}),
  };
}
