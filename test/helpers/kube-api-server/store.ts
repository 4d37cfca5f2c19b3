/**
 * The test API server's objects: one global resourceVersion counter, the watch history a client
 * can resume from, validation of every write, and garbage collection through ownerReferences.
 */
import { randomUUID } from 'node:crypto';
import { immutabilityErrors } from './immutability.js';
import { ApiError, notFound, type ResourceType, typeByKind } from './resources.js';
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

/** Who writes: a client through the main resource (status kept), its /status subresource, or the server
 * itself / a test.
 */
export type Writer = 'client' | 'status' | 'system';

export function kubeTime(ms = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function keyOf(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}|${namespace ?? ''}|${name}`;
}

export class Store {
  private readonly objects = new Map<string, any>();
  private history: StoreEvent[] = [];
  /** Events after this resourceVersion are all in `history`; a watch from an older one gets 410. */
  private horizon = 0;
  private rv = 0;
  private readonly listeners = new Set<(event: StoreEvent) => void>();
  readonly invalid: { kind: string; name: string; errors: string }[] = [];

  constructor(
    private readonly validate: boolean,
    private readonly historyLimit: number,
  ) {}

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
    const t = typeByKind(kind);
    if (!t)
      throw new ApiError(404, 'NotFound', `the server could not find the requested resource (kind ${kind})`);
    return t;
  }

  get(kind: string, namespace: string | undefined, name: string): any | undefined {
    const obj = this.objects.get(keyOf(this.type(kind).kind, namespace, name));
    return obj === undefined ? undefined : structuredClone(obj);
  }

  list(
    kind: string,
    namespace?: string,
    labelSelector?: string | null,
    fieldSelector?: string | null,
  ): any[] {
    const t = this.type(kind);
    const labels = labelMatcher(labelSelector);
    const fields = fieldMatcher(fieldSelector);
    return [...this.objects.values()]
      .filter(
        (o) =>
          o.kind === t.kind && (!namespace || o.metadata.namespace === namespace) && labels(o) && fields(o),
      )
      .sort((a, b) =>
        `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(
          `${b.metadata.namespace}/${b.metadata.name}`,
        ),
      )
      .map((o) => structuredClone(o));
  }

  private check(obj: any, current?: any): void {
    if (!this.validate) return;
    const errors = validationErrors(obj) ?? (current ? immutabilityErrors(current, obj) : undefined);
    if (errors === undefined) return;
    const t = this.type(obj.kind);
    const name = String(obj.metadata?.name ?? '');
    this.invalid.push({ kind: t.kind, name, errors });
    const resource = t.group ? `${t.kind}.${t.group}` : t.kind;
    throw new ApiError(422, 'Invalid', `${resource} "${name}" is invalid: ${errors}`, {
      name,
      kind: t.plural,
      group: t.group,
    });
  }

  private commit(type: EventType, obj: any, previous?: any): any {
    this.rv++;
    obj.metadata.resourceVersion = String(this.rv);
    const t = this.type(obj.kind);
    const key = keyOf(t.kind, obj.metadata.namespace, obj.metadata.name);
    if (type === 'DELETED') this.objects.delete(key);
    else this.objects.set(key, obj);
    const event: StoreEvent = {
      type,
      rv: this.rv,
      kind: t.kind,
      object: structuredClone(obj),
      ...(previous ? { previous } : {}),
    };
    this.history.push(event);
    while (this.history.length > this.historyLimit) this.horizon = this.history.shift()!.rv;
    for (const listener of [...this.listeners]) listener(event);
    return structuredClone(obj);
  }

  create(input: any, writer: Writer = 'client'): any {
    const t = this.type(input?.kind);
    const obj = structuredClone(input);
    obj.apiVersion = t.group ? `${t.group}/${t.version}` : t.version;
    obj.kind = t.kind;
    const meta = (obj.metadata ??= {});
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomUUID().slice(0, 5)}`;
    if (!meta.name)
      throw new ApiError(
        422,
        'Invalid',
        `${t.kind} is invalid: metadata.name: Required value: name or generateName is required`,
      );
    if (t.namespaced) {
      if (!meta.namespace)
        throw new ApiError(
          400,
          'BadRequest',
          `${t.kind} ${meta.name}: the namespace of the object is missing`,
        );
      if (!this.objects.has(keyOf('Namespace', undefined, meta.namespace))) {
        throw new ApiError(404, 'NotFound', `namespaces "${meta.namespace}" not found`, {
          name: meta.namespace,
          kind: 'namespaces',
        });
      }
    } else delete meta.namespace;
    if (this.objects.has(keyOf(t.kind, meta.namespace, meta.name))) {
      const resource = t.group ? `${t.plural}.${t.group}` : t.plural;
      throw new ApiError(409, 'AlreadyExists', `${resource} "${meta.name}" already exists`, {
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
    if (t.kind === 'Namespace') obj.status = { phase: 'Active' };
    this.check(obj);
    return this.commit('ADDED', obj);
  }

  /**
   * Replaces an object. `expectedRv` (from the body's metadata.resourceVersion) must be current
   * or the write is a 409 Conflict; a client writer cannot change status, a status writer only status.
   */
  replace(input: any, writer: Writer = 'client'): any {
    const t = this.type(input?.kind);
    const name = input?.metadata?.name;
    const namespace = t.namespaced ? input?.metadata?.namespace : undefined;
    const current = this.objects.get(keyOf(t.kind, namespace, name));
    if (!current) throw notFound(t, name);
    const expectedRv = input.metadata.resourceVersion;
    if (expectedRv && expectedRv !== current.metadata.resourceVersion) {
      const resource = t.group ? `${t.plural}.${t.group}` : t.plural;
      throw new ApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name, kind: t.plural, group: t.group },
      );
    }
    let obj = structuredClone(input);
    if (writer === 'status') obj = { ...structuredClone(current), status: obj.status };
    else if (writer === 'client' && t.hasStatus) obj.status = structuredClone(current.status);
    if (obj.status === undefined) delete obj.status;
    obj.apiVersion = current.apiVersion;
    obj.kind = current.kind;
    // What the server owns does not change through a write.
    obj.metadata = {
      ...obj.metadata,
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
      name,
      ...(namespace ? { namespace } : {}),
    };
    if (current.metadata.deletionTimestamp)
      obj.metadata.deletionTimestamp = current.metadata.deletionTimestamp;
    const specChanged = JSON.stringify(obj.spec) !== JSON.stringify(current.spec);
    obj.metadata.generation = (current.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    obj.metadata.resourceVersion = current.metadata.resourceVersion;
    if (JSON.stringify(obj) === JSON.stringify(current)) return structuredClone(current); // a no-op write keeps its resourceVersion
    this.check(obj, writer === 'client' ? current : undefined);
    return this.commit('MODIFIED', obj, structuredClone(current));
  }

  /**
   * Deletes an object and garbage-collects its dependents (objects whose ownerReferences name it):
   * Orphan strips the reference, Background/Foreground delete them (immediately, both).
   * A Namespace takes every object in it along.
   */
  delete(
    kind: string,
    namespace: string | undefined,
    name: string,
    propagation: Propagation = 'Background',
  ): any {
    const t = this.type(kind);
    const current = this.objects.get(keyOf(t.kind, t.namespaced ? namespace : undefined, name));
    if (!current) throw notFound(t, name);
    const deleted = this.commit('DELETED', structuredClone(current));
    if (t.kind === 'Namespace') {
      for (const o of [...this.objects.values()]) {
        const stillThere = this.objects.has(keyOf(o.kind, name, o.metadata.name)); // a cascade may have taken it already
        if (o.metadata.namespace === name && stillThere)
          this.delete(o.kind, name, o.metadata.name, 'Background');
      }
    }
    for (const o of [...this.objects.values()]) {
      const refs: any[] = o.metadata.ownerReferences ?? [];
      if (!refs.some((r) => r.uid === current.metadata.uid)) continue;
      if (propagation === 'Orphan') {
        const copy = structuredClone(o);
        copy.metadata.ownerReferences = refs.filter((r) => r.uid !== current.metadata.uid);
        if (copy.metadata.ownerReferences.length === 0) delete copy.metadata.ownerReferences;
        this.replace(copy, 'system');
      } else if (this.objects.has(keyOf(o.kind, o.metadata.namespace, o.metadata.name))) {
        this.delete(o.kind, o.metadata.namespace, o.metadata.name, 'Background');
      }
    }
    return deleted;
  }
}
