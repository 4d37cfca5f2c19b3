/**
 * The test API server's objects: one global resourceVersion counter, the watch history a client
 * can resume from, and what a real server does on every write: defaulting, admission (pods),
 * validation (schema, names, field rules, immutability), field ownership (managedFields).
 * Deletion (graceful pods, finalizers, namespaces, garbage collection) is in deletion.ts.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mutatePod, validatePod } from './admission.js';
import { type ManagedEntry, recordUpdate } from './apply.js';
import { APPS_KINDS, appsDefaults } from './apps.js';
import { CrdRegistry, crdStatus, decodeCustom, type FieldValidation, webhookDenial } from './crds.js';
import { applyDefaults, initialPodStatus } from './defaults.js';
import { type DeleteOptions, type DeleteResult, Deletion } from './deletion.js';
import { immutabilityErrors } from './immutability.js';
import {
  ApiError,
  forbidden,
  invalid,
  notFound,
  type ResourceType,
  resourceName,
  typeByKind,
  typeByPath,
} from './resources.js';
import { ruleErrors } from './rules.js';
import { fieldMatcher, labelMatcher } from './selectors.js';
import { validationErrors } from './validate.js';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';
export interface StoreEvent {
  type: EventType;
  rv: number;
  kind: string;
  /** The object after the change (for DELETED: as it was, with the deletion's resourceVersion). */
  object: any;
  /** The object before the change (MODIFIED only): lets a filtered watch turn it into ADDED/DELETED. */
  previous?: any;
}

export type Propagation = 'Orphan' | 'Background' | 'Foreground';
export type { DeleteOptions, DeleteResult } from './deletion.js';

/** Who writes: a client through the main resource (status kept), its /status subresource, or the server
 * itself / a test.
 */
export type Writer = 'client' | 'status' | 'system';

export interface WriteOptions {
  /** The field manager: the fields this write changes become its own (managedFields, operation Update). */
  manager?: string;
  /** managedFields were computed by server-side apply: store them as given. */
  applied?: boolean;
  /** Unknown fields of a custom object: dropped silently, dropped with a warning (the default), or refused. */
  fieldValidation?: FieldValidation;
  /** Where the write's warnings go (`unknown field "spec.x"`), for the Warning header. */
  warnings?: string[];
  /** The subresource the write came through (`scale`), for managedFields. */
  subresource?: string;
}

export interface StoreOptions {
  validate: boolean;
  historyLimit: number;
  /** Pods are deleted gracefully (deletionTimestamp, then the kubelet removes them); false: at once. */
  gracefulPods: boolean;
}

export function kubeTime(ms = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export const terminal = (pod: any) => pod?.status?.phase === 'Succeeded' || pod?.status?.phase === 'Failed';

/** Five characters as the API server's name generator picks them (no vowels, no look-alikes). */
function randomSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return [...randomBytes(5)].map((b) => alphabet[b % alphabet.length]).join('');
}

export function keyOf(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}|${name}`;
}

export class Store {
  /** Every object by `${kind}|${namespace}|${name}` (bench/kube/cluster.ts reads this map directly). */
  private readonly objects = new Map<string, any>();
  /** The same objects by kind, then `${namespace}|${name}`. */
  private readonly byKind = new Map<string, Map<string, any>>();
  private history: StoreEvent[] = [];
  /** Events after this resourceVersion are all in `history`; a watch from an older one gets 410. */
  private horizon = 0;
  private rv = 0;
  private ips = 0;
  private readonly listeners = new Set<(event: StoreEvent) => void>();
  private readonly deletion: Deletion;
  readonly invalid: { kind: string; name: string; errors: string }[] = [];
  /** The CustomResourceDefinitions this server serves (their types, schemas). */
  readonly crds = new CrdRegistry();

  constructor(readonly options: StoreOptions) {
    this.deletion = new Deletion(this, (type, obj, previous) => this.commit(type, obj, previous));
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Events after `rv` for a resuming watch, or undefined when they are no longer kept (410). */
  eventsAfter(rv: number): StoreEvent[] | undefined {
    if (rv < this.horizon) return undefined;
    return this.history.filter((e) => e.rv > rv);
  }

  /** Forgets the history: every resumable resourceVersion before now becomes too old. */
  compact(): void {
    this.history = [];
    this.horizon = this.rv;
  }

  type(kind: string): ResourceType {
    const t = typeByKind(kind) ?? this.crds.byKind(kind);
    if (!t)
      throw new ApiError(404, 'NotFound', `the server could not find the requested resource (kind ${kind})`);
    return t;
  }

  /** The type a REST path addresses (`batch/v1`, `jobs`), custom ones included. */
  typeByPath(groupVersion: string, plural: string): ResourceType | undefined {
    return typeByPath(groupVersion, plural, this.crds.all());
  }

  private bucket(kind: string): Map<string, any> {
    let map = this.byKind.get(kind);
    if (!map) this.byKind.set(kind, (map = new Map()));
    return map;
  }

  /** The stored object itself (no copy): for reads that do not keep or change it. */
  peek(kind: string, namespace: string | undefined, name: string): any | undefined {
    const t = this.type(kind);
    return this.bucket(t.kind).get(keyOf(t.namespaced ? namespace : undefined, name));
  }

  get(kind: string, namespace: string | undefined, name: string): any | undefined {
    const obj = this.peek(kind, namespace, name);
    return obj === undefined ? undefined : structuredClone(obj);
  }

  /** The stored objects of a kind (no copies), optionally of one namespace. */
  peekAll(kind: string, namespace?: string): any[] {
    const all = [...this.bucket(this.type(kind).kind).values()];
    return namespace ? all.filter((o) => o.metadata.namespace === namespace) : all;
  }

  /** Kinds with at least one object. */
  kinds(): string[] {
    return [...this.byKind]
      .filter(([k, m]) => m.size > 0 && (typeByKind(k) ?? this.crds.byKind(k)))
      .map(([k]) => k);
  }

  list(
    kind: string,
    namespace?: string,
    labelSelector?: string | null,
    fieldSelector?: string | null,
  ): any[] {
    const labels = labelMatcher(labelSelector);
    const fields = fieldMatcher(fieldSelector);
    return this.peekAll(kind, namespace)
      .filter((o) => labels(o) && fields(o))
      .sort((a, b) =>
        `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(
          `${b.metadata.namespace}/${b.metadata.name}`,
        ),
      )
      .map((o) => structuredClone(o));
  }

  /**
   * Validates an object about to be stored. `current`: the stored object a client replaces (immutability);
   * `old`: the stored object of any update, `writtenAs`: the apiVersion it came in (custom objects' schemas);
   * `writer`: a /status write skips the kind's validating webhook.
   */
  private check(obj: any, current?: any, old?: any, writtenAs?: string, writer?: Writer): void {
    if (!this.options.validate) return;
    const t = this.type(obj.kind);
    const problems = [...ruleErrors(obj), ...this.crds.problems(obj, t, old, writtenAs)];
    // apps/v1, autoscaling/v2: the real field errors alone (the schema's say the same, worse).
    const rulesFirst = APPS_KINDS.has(t.kind) && problems.length > 0;
    const schema = t.custom || rulesFirst ? undefined : validationErrors(obj);
    if (schema) problems.push(schema);
    const immutable = current ? immutabilityErrors(current, obj) : undefined;
    if (immutable && (!problems.length || rulesFirst)) problems.push(immutable);
    const name = String(obj.metadata?.name ?? '');
    const denied =
      !problems.length && t.custom && writer !== 'status' ? webhookDenial(t, obj, old) : undefined;
    if (denied) {
      this.invalid.push({ kind: t.kind, name, errors: denied.message });
      throw denied;
    }
    if (!problems.length) return;
    this.invalid.push({ kind: t.kind, name, errors: problems.join('; ') });
    throw invalid(t, name, problems);
  }

  /** Stores a change and tells the watches (used by deletion.ts too). */
  private commit(type: EventType, obj: any, previous?: any): any {
    this.rv++;
    obj.metadata.resourceVersion = String(this.rv);
    const t = this.type(obj.kind);
    const key = keyOf(obj.metadata.namespace, obj.metadata.name);
    if (type === 'DELETED') {
      this.bucket(t.kind).delete(key);
      this.objects.delete(`${t.kind}|${key}`);
    } else {
      this.bucket(t.kind).set(key, obj);
      this.objects.set(`${t.kind}|${key}`, obj);
    }
    if (t.kind === 'CustomResourceDefinition') {
      if (type === 'DELETED') this.crds.unregister(obj.metadata.name);
      else this.crds.register(obj);
    }
    const event: StoreEvent = {
      type,
      rv: this.rv,
      kind: t.kind,
      object: structuredClone(obj),
      ...(previous ? { previous } : {}),
    };
    this.history.push(event);
    while (this.history.length > this.options.historyLimit) this.horizon = this.history.shift()!.rv;
    for (const listener of [...this.listeners]) listener(event);
    return structuredClone(obj);
  }

  /** What admission reads: the stored objects, uncopied. */
  private readonly reader = {
    get: (kind: string, namespace: string | undefined, name: string) => this.peek(kind, namespace, name),
    list: (kind: string, namespace?: string) => this.peekAll(kind, namespace),
  };

  private allocateIp = (): string => {
    const n = ++this.ips;
    return `10.96.${(n >> 8) & 255}.${n & 255}`;
  };

  create(input: any, writer: Writer = 'client', options: WriteOptions = {}): any {
    const t = this.type(input?.kind);
    const obj = structuredClone(input);
    const writtenAs = t.custom ? String(input.apiVersion ?? `${t.group}/${t.version}`) : undefined;
    obj.apiVersion = writtenAs ?? (t.group ? `${t.group}/${t.version}` : t.version);
    obj.kind = t.kind;
    const meta = (obj.metadata ??= {});
    if (!meta.name && !meta.generateName)
      throw new ApiError(
        422,
        'Invalid',
        `${t.kind} is invalid: metadata.name: Required value: name or generateName is required`,
      );
    const errorName = String(meta.name || meta.generateName);
    if (t.namespaced) {
      if (!meta.namespace)
        throw new ApiError(
          400,
          'BadRequest',
          `${t.kind} ${errorName}: the namespace of the object is missing`,
        );
      const namespace = this.peek('Namespace', undefined, meta.namespace);
      if (!namespace)
        throw new ApiError(404, 'NotFound', `namespaces "${meta.namespace}" not found`, {
          name: meta.namespace,
          kind: 'namespaces',
        });
      if (namespace.metadata.deletionTimestamp)
        throw forbidden(
          t,
          errorName,
          `unable to create new content in namespace ${meta.namespace} because it is being terminated`,
        );
    } else delete meta.namespace;
    if (!meta.name) {
      do meta.name = `${String(meta.generateName).slice(0, 58)}${randomSuffix()}`;
      while (this.peek(t.kind, meta.namespace, meta.name));
    }
    if (this.peek(t.kind, meta.namespace, meta.name)) {
      throw new ApiError(409, 'AlreadyExists', `${resourceName(t)} "${meta.name}" already exists`, {
        name: meta.name,
        kind: t.plural,
        group: t.group,
      });
    }
    if (writer !== 'system' && t.hasStatus) delete obj.status;
    meta.uid = randomUUID();
    meta.creationTimestamp = kubeTime();
    meta.generation = 1;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    if (t.kind === 'Namespace') {
      obj.status = { phase: 'Active' };
      meta.labels = { ...meta.labels, 'kubernetes.io/metadata.name': meta.name };
    }
    if (t.kind === 'CustomResourceDefinition' && obj.spec?.versions && obj.spec?.names)
      obj.status = crdStatus(obj);
    if (t.custom) decodeCustom(this.crds, obj, t, writer, options);
    applyDefaults(obj, { creating: true, allocateIp: this.allocateIp });
    appsDefaults(obj, t.version);
    if (t.kind === 'Pod') {
      mutatePod(obj, this.reader, errorName);
      initialPodStatus(obj, writer === 'system');
    }
    this.check(obj, undefined, undefined, writtenAs, writer);
    if (t.kind === 'Pod') validatePod(obj, this.reader, errorName);
    if (!options.applied) {
      delete meta.managedFields;
      if (options.manager) meta.managedFields = recordUpdate(undefined, obj, options.manager);
      if (!meta.managedFields) delete meta.managedFields;
    }
    return this.commit('ADDED', obj);
  }

  /**
   * Replaces an object. `expectedRv` (from the body's metadata.resourceVersion) must be current
   * or the write is a 409 Conflict; a client writer cannot change status, a status writer only status.
   */
  replace(input: any, writer: Writer = 'client', options: WriteOptions = {}): any {
    const t = this.type(input?.kind);
    const name = input?.metadata?.name;
    const namespace = t.namespaced ? input?.metadata?.namespace : undefined;
    const current = this.peek(t.kind, namespace, name);
    if (!current) throw notFound(t, name);
    const expectedRv = input.metadata.resourceVersion;
    if (expectedRv && expectedRv !== current.metadata.resourceVersion) {
      throw new ApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${resourceName(t)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name, kind: t.plural, group: t.group },
      );
    }
    let obj = structuredClone(input);
    const writtenAs = t.custom ? String(input.apiVersion ?? current.apiVersion) : undefined;
    if (writer === 'status') obj = { ...structuredClone(current), status: obj.status };
    else if (writer === 'client' && t.hasStatus) obj.status = structuredClone(current.status);
    if (obj.status === undefined) delete obj.status;
    obj.apiVersion = writtenAs ?? current.apiVersion;
    obj.kind = current.kind;
    // What the server owns does not change through a write.
    obj.metadata = {
      ...obj.metadata,
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
      name,
      ...(namespace ? { namespace } : {}),
    };
    for (const field of ['deletionTimestamp', 'deletionGracePeriodSeconds'] as const) {
      if (current.metadata[field] !== undefined) obj.metadata[field] = current.metadata[field];
      else delete obj.metadata[field];
    }
    if (t.kind === 'Namespace')
      obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': name };
    if (t.kind === 'CustomResourceDefinition' && obj.spec?.versions && obj.spec?.names)
      obj.status = crdStatus(obj, current.status);
    if (t.custom) decodeCustom(this.crds, obj, t, writer, options, current);
    applyDefaults(obj, { creating: false, allocateIp: this.allocateIp });
    appsDefaults(obj, t.version);
    const specChanged = JSON.stringify(obj.spec) !== JSON.stringify(current.spec);
    obj.metadata.generation = (current.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    obj.metadata.resourceVersion = current.metadata.resourceVersion;
    if (options.applied) obj.metadata.managedFields = input.metadata?.managedFields;
    else {
      obj.metadata.managedFields = current.metadata.managedFields;
      if (options.manager)
        obj.metadata.managedFields = recordUpdate(
          current,
          obj,
          options.manager,
          writer === 'status' ? 'status' : options.subresource,
        ) as ManagedEntry[] | undefined;
      if (!obj.metadata.managedFields) delete obj.metadata.managedFields;
    }
    if (JSON.stringify(obj) === JSON.stringify(current)) return structuredClone(current); // a no-op write keeps its resourceVersion
    this.check(obj, writer === 'client' ? current : undefined, current, writtenAs, writer);
    const stored = this.commit('MODIFIED', obj, structuredClone(current));
    this.deletion.afterUpdate(stored);
    return stored;
  }

  /**
   * Deletes an object as the API server does: a bound pod gracefully (deletionTimestamp set, removed
   * once the kubelet has stopped it, or at once with gracePeriodSeconds 0), an object with finalizers
   * when they are gone, a Namespace once its content is gone; dependents are garbage-collected.
   */
  delete(
    kind: string,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): DeleteResult {
    return this.deletion.delete(kind, namespace, name, options);
  }
}
