/**
 * Field ownership (`metadata.managedFields`, FieldsV1) and server-side apply, as structured-merge-diff
 * does it on a real API server:
 * - every write records who set what: an apply as its manager's "Apply" entry (exactly the fields in
 *   its configuration), any other write (create, update, patch) as an "Update" entry of the fields it
 *   changed, taken away from whoever owned them;
 * - an apply that sets a field another manager owns to a different value is a 409 Conflict
 *   (`Apply failed with 1 conflict: conflict with "kubectl" using batch/v1: .spec.parallelism`) unless
 *   force=true, which takes the field over;
 * - a field a manager applied before and leaves out now is removed, unless another manager owns it;
 * - maps merge key by key; lists of containers, env, volumes, ports… merge by their keys (name…);
 *   other lists are atomic (replaced whole, owned as one field).
 */
import { ApiError, type ResourceType } from './resources.js';
import { kubeTime } from './store.js';

/** Keys of the associative lists (x-kubernetes-list-map-keys), by field name. */
const LIST_KEYS: Record<string, string[]> = {
  containers: ['name'],
  initContainers: ['name'],
  ephemeralContainers: ['name'],
  env: ['name'],
  volumes: ['name'],
  volumeMounts: ['mountPath'],
  imagePullSecrets: ['name'],
  conditions: ['type'],
  ownerReferences: ['uid'],
  schedulingGates: ['name'],
  resourceClaims: ['name'],
  hostAliases: ['ip'],
};
const SERVER_META = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
]);

export interface ManagedEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}
type EntryMeta = Pick<ManagedEntry, 'manager' | 'operation' | 'apiVersion' | 'time' | 'subresource'>;
type Owned = { entry: EntryMeta; set: Set<string> };

const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const equal = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function itemKey(item: any, keys: string[]): string {
  const picked: Record<string, unknown> = {};
  for (const k of [...keys].sort()) if (item[k] !== undefined) picked[k] = item[k];
  return `k:${JSON.stringify(picked)}`;
}
const keyedList = (field: string | undefined, value: unknown): value is any[] =>
  field !== undefined && field in LIST_KEYS && Array.isArray(value) && value.every(isObject);

/** The owned-field paths of `obj` (JSON arrays of FieldsV1 keys: `["f:spec","f:containers","k:{\"name\":\"main\"}"]`). */
export function fieldSet(obj: any): Set<string> {
  const out = new Set<string>();
  const walk = (value: unknown, path: string[], field: string | undefined) => {
    if (isObject(value)) {
      const entries = Object.entries(value).filter(
        ([k]) => !(path.length === 1 && path[0] === 'f:metadata' && SERVER_META.has(k)),
      );
      if (entries.length === 0 && path.length > 0) out.add(JSON.stringify(path));
      for (const [k, v] of entries) walk(v, [...path, `f:${k}`], k);
    } else if (keyedList(field, value)) {
      for (const item of value) {
        const itemPath = [...path, itemKey(item, LIST_KEYS[field!]!)];
        out.add(JSON.stringify(itemPath));
        for (const [k, v] of Object.entries(item)) walk(v, [...itemPath, `f:${k}`], k);
      }
    } else if (path.length > 0 && value !== undefined) out.add(JSON.stringify(path));
  };
  const { apiVersion: _a, kind: _k, ...rest } = obj ?? {};
  walk(rest, [], undefined);
  return out;
}

function step(node: any, segment: string): any {
  if (segment.startsWith('f:')) return isObject(node) ? node[segment.slice(2)] : undefined;
  if (!Array.isArray(node)) return undefined;
  const wanted = JSON.parse(segment.slice(2));
  return node.find((item) => isObject(item) && Object.entries(wanted).every(([k, v]) => equal(item[k], v)));
}

function valueAt(obj: any, path: string[]): unknown {
  let node = obj;
  for (const segment of path) node = step(node, segment);
  return node;
}

function removeAt(obj: any, path: string[]): void {
  const parent = valueAt(obj, path.slice(0, -1));
  const last = path[path.length - 1]!;
  if (last.startsWith('f:') && isObject(parent)) delete parent[last.slice(2)];
  else if (Array.isArray(parent)) {
    const item = step(parent, last);
    if (item) parent.splice(parent.indexOf(item), 1);
  }
}

/** `.spec.template.spec.containers[name="main"].image`, as conflicts name fields. */
export function pathString(path: string[]): string {
  return path
    .map((s) => {
      if (s.startsWith('f:')) return `.${s.slice(2)}`;
      const keys = Object.entries(JSON.parse(s.slice(2)));
      return `[${keys.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}]`;
    })
    .join('');
}

function toFieldsV1(set: Set<string>): Record<string, unknown> {
  const root: Record<string, any> = {};
  const owned: Record<string, any>[] = [];
  for (const p of set) {
    let node = root;
    for (const segment of JSON.parse(p) as string[]) node = node[segment] ??= {};
    owned.push(node);
  }
  for (const node of owned) if (Object.keys(node).length > 0) node['.'] = {};
  return root;
}

function fromFieldsV1(tree: Record<string, any> | undefined): Set<string> {
  const out = new Set<string>();
  const walk = (node: Record<string, any>, path: string[]) => {
    const children = Object.keys(node).filter((k) => k !== '.');
    if (path.length > 0 && (children.length === 0 || '.' in node)) out.add(JSON.stringify(path));
    for (const k of children) walk(node[k] ?? {}, [...path, k]);
  };
  walk(tree ?? {}, []);
  return out;
}

const sameManager = (a: EntryMeta, b: Omit<EntryMeta, 'time' | 'apiVersion'>) =>
  a.manager === b.manager && a.operation === b.operation && (a.subresource ?? '') === (b.subresource ?? '');

function readManaged(obj: any): Owned[] {
  return (obj?.metadata?.managedFields ?? []).map((e: ManagedEntry) => {
    const { fieldsV1, fieldsType: _t, ...entry } = e;
    return { entry, set: fromFieldsV1(fieldsV1) };
  });
}

function writeManaged(owned: Owned[]): ManagedEntry[] | undefined {
  const entries = owned
    .filter((o) => o.set.size > 0)
    .map((o) => ({ ...o.entry, fieldsType: 'FieldsV1' as const, fieldsV1: toFieldsV1(o.set) }));
  return entries.length ? (entries as ManagedEntry[]) : undefined;
}

function entryFor(owned: Owned[], wanted: Omit<EntryMeta, 'time'>): Owned {
  let found = owned.find((o) => sameManager(o.entry, wanted));
  if (!found) {
    found = { entry: { ...wanted, time: kubeTime() }, set: new Set() };
    owned.push(found);
  }
  return found;
}

function printManager(e: EntryMeta): string {
  const sub = e.subresource ? ` with subresource ${JSON.stringify(e.subresource)}` : '';
  const using = e.operation === 'Update' ? ` using ${e.apiVersion}` : '';
  return `${JSON.stringify(e.manager)}${sub}${using}`;
}

/**
 * The managedFields after a non-apply write by `manager` (`before` undefined: a create): it owns what it
 * changed; what it removed no one owns any more. `scope`: the part of the object the write could change.
 */
export function recordUpdate(
  before: any,
  after: any,
  manager: string,
  subresource?: string,
): ManagedEntry[] | undefined {
  const owned = before ? readManaged(before) : [];
  const beforeSet = before ? fieldSet(before) : new Set<string>();
  const afterSet = fieldSet(after);
  const changed = [...afterSet].filter(
    (p) => !beforeSet.has(p) || !equal(valueAt(before, JSON.parse(p)), valueAt(after, JSON.parse(p))),
  );
  const removed = [...beforeSet].filter((p) => !afterSet.has(p));
  if (!changed.length && !removed.length && before) return before.metadata?.managedFields;
  for (const o of owned) for (const p of [...removed, ...changed]) o.set.delete(p);
  if (changed.length) {
    const mine = entryFor(owned, {
      manager,
      operation: 'Update',
      apiVersion: after.apiVersion,
      ...(subresource ? { subresource } : {}),
    });
    mine.entry.time = kubeTime();
    for (const p of changed) mine.set.add(p);
  }
  return writeManaged(owned);
}

/** Merges an apply configuration into the live object: maps by key, keyed lists by item key, the rest replaced. */
function merge(live: unknown, applied: unknown, field: string | undefined): unknown {
  if (isObject(applied)) {
    const result: Record<string, unknown> = isObject(live) ? { ...live } : {};
    for (const [k, v] of Object.entries(applied)) {
      if (v === null) delete result[k];
      else result[k] = merge(result[k], v, k);
    }
    return result;
  }
  if (keyedList(field, applied) && keyedList(field, live ?? [])) {
    const keys = LIST_KEYS[field!]!;
    const result = structuredClone((live as any[] | undefined) ?? []);
    for (const item of applied) {
      const at = result.findIndex((r) => itemKey(r, keys) === itemKey(item, keys));
      if (at >= 0) result[at] = merge(result[at], item, undefined);
      else result.push(structuredClone(item));
    }
    return result;
  }
  return structuredClone(applied);
}

/**
 * Server-side apply of `applied` (the configuration, already in the URL's kind and name) by `manager` onto
 * `live` (undefined: the object does not exist yet). Returns the object to store, managedFields set.
 * Throws a 409 Conflict when another manager owns a field the configuration changes, unless `force`.
 */
export function serverSideApply(
  t: ResourceType,
  live: any,
  applied: any,
  manager: string,
  force: boolean,
  subresource?: string,
): any {
  const config = structuredClone(applied);
  if (t.hasStatus && subresource !== 'status') delete config.status;
  const appliedSet = fieldSet(config);
  const who = { manager, operation: 'Apply' as const, ...(subresource ? { subresource } : {}) };
  if (!live) {
    const entry: ManagedEntry = {
      ...who,
      apiVersion: config.apiVersion,
      time: kubeTime(),
      fieldsType: 'FieldsV1',
      fieldsV1: toFieldsV1(appliedSet),
    };
    return { ...config, metadata: { ...config.metadata, managedFields: [entry] } };
  }
  const owned = readManaged(live);
  const others = owned.filter((o) => !sameManager(o.entry, who));
  const conflicts: { owner: Owned; path: string }[] = [];
  for (const p of appliedSet) {
    const path = JSON.parse(p) as string[];
    if (path[path.length - 1]!.startsWith('k:')) continue; // an item's existence: shared, never a conflict
    for (const o of others)
      if (o.set.has(p) && !equal(valueAt(live, path), valueAt(config, path)))
        conflicts.push({ owner: o, path: p });
  }
  if (conflicts.length && !force) throw conflictError(t, live.metadata.name, conflicts);
  for (const c of conflicts) c.owner.set.delete(c.path);
  const mine = owned.find((o) => sameManager(o.entry, who));
  const next = structuredClone(live);
  const stillOwned = (p: string) => {
    const prefix = p.slice(0, -1); // `["a","b"` matches `["a","b"]` and `["a","b","c"]`
    return others.some((o) => [...o.set].some((q) => q === p || q.startsWith(`${prefix},`)));
  };
  const dropped = [...(mine?.set ?? [])].filter((p) => !appliedSet.has(p) && !stillOwned(p));
  dropped.sort((a, b) => b.length - a.length).forEach((p) => removeAt(next, JSON.parse(p)));
  const merged: any = merge(next, config, undefined);
  const changed =
    !mine ||
    !equal([...mine.set].sort(), [...appliedSet].sort()) ||
    conflicts.length > 0 ||
    !equal(merged, live);
  const entry = entryFor(owned, { ...who, apiVersion: config.apiVersion });
  entry.set = appliedSet;
  if (changed) entry.entry.time = kubeTime();
  merged.metadata = { ...merged.metadata, managedFields: writeManaged(owned) };
  if (!merged.metadata.managedFields) delete merged.metadata.managedFields;
  return merged;
}

function conflictError(t: ResourceType, name: string, conflicts: { owner: Owned; path: string }[]): ApiError {
  const shown = conflicts.map((c) => ({
    manager: printManager(c.owner.entry),
    field: pathString(JSON.parse(c.path)),
  }));
  let message: string;
  if (shown.length === 1)
    message = `Apply failed with 1 conflict: conflict with ${shown[0]!.manager}: ${shown[0]!.field}`;
  else {
    const byManager = new Map<string, string[]>();
    for (const s of shown) byManager.set(s.manager, [...(byManager.get(s.manager) ?? []), s.field]);
    const lines = [...byManager.keys()]
      .sort()
      .flatMap((m) => [`conflicts with ${m}:`, ...byManager.get(m)!.map((f) => `- ${f}`)]);
    message = `Apply failed with ${shown.length} conflicts: ${lines.join('\n')}`;
  }
  return new ApiError(409, 'Conflict', message, {
    name,
    kind: t.plural,
    group: t.group,
    causes: shown.map((s) => ({
      reason: 'FieldManagerConflict',
      message: `conflict with ${s.manager}`,
      field: s.field,
    })),
  });
}
