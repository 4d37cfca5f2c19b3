/**
 * Deletion as a real API server and its garbage collector do it:
 * - a pod bound to a node is deleted gracefully: metadata.deletionTimestamp (now + grace) and
 *   deletionGracePeriodSeconds are set and the pod stays until the kubelet has stopped it and deletes
 *   it with grace 0 (an unbound or terminal pod, or gracePeriodSeconds=0, goes at once);
 * - an object with finalizers gets a deletionTimestamp and goes when its last finalizer is removed;
 * - dependents (ownerReferences) are orphaned (Orphan) or deleted (Background); Foreground keeps the
 *   owner, with the `foregroundDeletion` finalizer, until its dependents are gone;
 * - a Namespace turns Terminating, its content is deleted, and it goes once it is empty.
 */
import { notFound } from './resources.js';
import { type EventType, kubeTime, type Propagation, type Store, terminal } from './store.js';

export interface DeleteOptions {
  propagation?: Propagation;
  /** Overrides the pod's terminationGracePeriodSeconds; 0 deletes at once. */
  gracePeriodSeconds?: number;
}

export interface DeleteResult {
  /** The object as deleted, or (pending) as it is now, with its deletionTimestamp. */
  object: any;
  /** Still there: terminating, or waiting for finalizers / its content. */
  pending: boolean;
}

type Commit = (type: EventType, obj: any, previous?: any) => any;

const FOREGROUND = 'foregroundDeletion';

export class Deletion {
  constructor(
    private readonly store: Store,
    private readonly commit: Commit,
  ) {}

  delete(kind: string, namespace: string | undefined, name: string, options: DeleteOptions): DeleteResult {
    const t = this.store.type(kind);
    const current = this.store.peek(t.kind, namespace, name);
    if (!current) throw notFound(t, name);
    const propagation = options.propagation ?? 'Background';
    if (t.kind === 'Namespace') return this.terminateNamespace(current);
    if (t.kind === 'CustomResourceDefinition') this.removeInstances(current);
    if (t.kind === 'Pod' && this.store.options.gracefulPods) {
      const grace = options.gracePeriodSeconds ?? current.spec?.terminationGracePeriodSeconds ?? 30;
      if (grace > 0 && current.spec?.nodeName && !terminal(current))
        return this.markTerminating(current, grace);
    }
    const finalizers: string[] = [...(current.metadata.finalizers ?? [])];
    const foreground = propagation === 'Foreground' && this.dependents(current.metadata.uid).length > 0;
    if (foreground && !finalizers.includes(FOREGROUND)) finalizers.push(FOREGROUND);
    if (finalizers.length === 0) return { object: this.remove(current, propagation), pending: false };
    const next = structuredClone(current);
    next.metadata.deletionTimestamp ??= kubeTime();
    next.metadata.deletionGracePeriodSeconds = 0;
    next.metadata.finalizers = finalizers;
    const changed = JSON.stringify(next) !== JSON.stringify(current);
    let object = changed ? this.commit('MODIFIED', next, structuredClone(current)) : structuredClone(current);
    if (foreground) {
      this.collect(current, 'Background');
      this.finishForeground(current);
      object = this.store.get(t.kind, namespace, name) ?? object;
    }
    return { object, pending: this.store.peek(t.kind, namespace, name) !== undefined };
  }

  /** After an update: an object being deleted whose last finalizer is gone goes now. */
  afterUpdate(obj: any): void {
    const meta = obj.metadata;
    if (!meta.deletionTimestamp || (meta.finalizers ?? []).length > 0 || obj.kind === 'Namespace') return;
    if (obj.kind === 'Pod' && meta.deletionGracePeriodSeconds !== 0) return; // the kubelet has not finished
    const current = this.store.peek(obj.kind, meta.namespace, meta.name);
    if (current) this.remove(current, 'Background');
  }

  private markTerminating(current: any, grace: number): DeleteResult {
    const deadline = Date.now() + grace * 1000;
    const existing = current.metadata.deletionTimestamp;
    if (existing && Date.parse(existing) <= deadline)
      return { object: structuredClone(current), pending: true };
    const next = structuredClone(current);
    next.metadata.deletionTimestamp = kubeTime(deadline);
    next.metadata.deletionGracePeriodSeconds = grace;
    next.metadata.generation = (next.metadata.generation ?? 1) + 1;
    return { object: this.commit('MODIFIED', next, structuredClone(current)), pending: true };
  }

  private remove(current: any, propagation: Propagation): any {
    const deleted = this.commit('DELETED', structuredClone(current));
    this.collect(current, propagation);
    for (const ref of current.metadata.ownerReferences ?? []) {
      const owner = this.ownerOf(ref, current.metadata.namespace);
      if (owner) this.finishForeground(owner);
    }
    if (current.metadata.namespace) this.finishNamespace(current.metadata.namespace);
    return deleted;
  }

  /** A deleted CRD takes its objects with it (the real server's customresourcecleanup finalizer). */
  private removeInstances(crd: any): void {
    const kind = this.store.crds.kindOf(crd.metadata.name);
    if (!kind) return;
    for (const o of this.store.peekAll(kind)) {
      if (!this.store.peek(kind, o.metadata.namespace, o.metadata.name)) continue;
      this.delete(kind, o.metadata.namespace, o.metadata.name, { propagation: 'Background' });
    }
    // What finalizers still hold goes too: the kind is no longer served.
    for (const o of this.store.peekAll(kind)) this.remove(o, 'Background');
  }

  private ownerOf(ref: any, namespace: string | undefined): any | undefined {
    if (!this.knownKind(ref.kind)) return undefined; // e.g. a custom kind whose CRD is gone
    const t = this.store.type(ref.kind);
    const owner = this.store.peek(t.kind, t.namespaced ? namespace : undefined, ref.name);
    return owner?.metadata.uid === ref.uid ? owner : undefined;
  }

  private knownKind(kind: string): boolean {
    try {
      this.store.type(kind);
      return true;
    } catch {
      return false;
    }
  }

  private dependents(uid: string): any[] {
    return this.store
      .kinds()
      .flatMap((kind) => this.store.peekAll(kind))
      .filter((o) => (o.metadata.ownerReferences ?? []).some((r: any) => r.uid === uid));
  }

  /** The garbage collector: dependents of a deleted owner are orphaned or deleted. */
  private collect(owner: any, propagation: Propagation): void {
    for (const o of this.dependents(owner.metadata.uid)) {
      const { kind, metadata } = o;
      if (!this.store.peek(kind, metadata.namespace, metadata.name)) continue; // a cascade took it already
      if (propagation === 'Orphan') {
        const copy = structuredClone(o);
        copy.metadata.ownerReferences = metadata.ownerReferences.filter(
          (r: any) => r.uid !== owner.metadata.uid,
        );
        if (copy.metadata.ownerReferences.length === 0) delete copy.metadata.ownerReferences;
        delete copy.metadata.resourceVersion;
        this.store.replace(copy, 'system');
      } else if (!metadata.deletionTimestamp || kind === 'Pod') {
        this.delete(kind, metadata.namespace, metadata.name, { propagation: 'Background' });
      }
    }
  }

  /** An owner deleted in the foreground goes once no dependent is left. */
  private finishForeground(owner: any): void {
    const meta = owner.metadata;
    if (!meta.deletionTimestamp || !(meta.finalizers ?? []).includes(FOREGROUND)) return;
    if (this.dependents(meta.uid).length > 0) return;
    const next = structuredClone(owner);
    next.metadata.finalizers = meta.finalizers.filter((f: string) => f !== FOREGROUND);
    if (next.metadata.finalizers.length === 0) delete next.metadata.finalizers;
    const stored = this.commit('MODIFIED', next, structuredClone(owner));
    this.afterUpdate(stored);
  }

  private terminateNamespace(ns: any): DeleteResult {
    const name: string = ns.metadata.name;
    if (!ns.metadata.deletionTimestamp) {
      const next = structuredClone(ns);
      next.metadata.deletionTimestamp = kubeTime();
      next.metadata.deletionGracePeriodSeconds = 0;
      next.status = { ...next.status, phase: 'Terminating' };
      this.commit('MODIFIED', next, structuredClone(ns));
    }
    for (const kind of this.store.kinds()) {
      if (!this.store.type(kind).namespaced) continue;
      for (const o of this.store.peekAll(kind, name)) {
        if (!this.store.peek(kind, name, o.metadata.name)) continue;
        if (o.metadata.deletionTimestamp && kind !== 'Pod') continue;
        this.delete(kind, name, o.metadata.name, { propagation: 'Background' });
      }
    }
    this.finishNamespace(name);
    const now = this.store.get('Namespace', undefined, name);
    return { object: now ?? { ...structuredClone(ns), status: { phase: 'Terminating' } }, pending: !!now };
  }

  /** A terminating namespace with nothing left in it goes. */
  private finishNamespace(name: string): void {
    const ns = this.store.peek('Namespace', undefined, name);
    if (!ns?.metadata.deletionTimestamp) return;
    for (const kind of this.store.kinds())
      if (this.store.type(kind).namespaced && this.store.peekAll(kind, name).length > 0) return;
    this.commit('DELETED', structuredClone(ns));
  }
}
