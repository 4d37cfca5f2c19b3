/**
 * A custom resource against its CRD version's structural openAPIV3Schema, as the apiextensions
 * API server treats it:
 * - pruning: fields the schema does not declare are dropped (their paths returned, for
 *   fieldValidation Warn / Strict), except under `x-kubernetes-preserve-unknown-fields: true`; the root
 *   and every `x-kubernetes-embedded-resource` keep apiVersion, kind and metadata (ObjectMeta fields only);
 * - defaulting: `default` of an absent property (and of null in a non-nullable one), nested defaults too;
 * - validation with ajv (types, required, enum, bounds, patterns, lengths, item counts), plus what ajv
 *   cannot see: `x-kubernetes-int-or-string`, `x-kubernetes-list-type` set / map uniqueness, an embedded
 *   resource's apiVersion and kind, and the CEL transition rule `self == oldSelf` (other CEL rules are
 *   not evaluated), every error in the real server's words (`spec.x: Invalid value: …`).
 * Compiled validators are cached by schema (large CRDs take a few hundred ms to compile).
 */
import { createHash } from 'node:crypto';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const OBJECT_META = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

const RESOURCE_FIELDS = new Set(['apiVersion', 'kind', 'metadata']);

const child = (path: string, key: string) =>
  /^[A-Za-z_$][\w$-]*$/.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${key}]`;

/**
 * Prunes and defaults `obj` in place along `schema`; returns the paths of the fields it dropped
 * (`spec.foo`, `spec.items[0].bar`), as fieldValidation reports them.
 */
export function pruneAndDefault(obj: any, schema: any): string[] {
  const unknown: string[] = [];
  walk(obj, schema, '', unknown, true);
  return unknown.sort();
}

function pruneMeta(meta: unknown, path: string, unknown: string[]): void {
  if (!isObject(meta)) return;
  for (const key of Object.keys(meta))
    if (!OBJECT_META.has(key)) {
      delete meta[key];
      unknown.push(child(path, key));
    }
}

function walk(value: unknown, s: any, path: string, unknown: string[], root = false): void {
  if (!isObject(s)) return;
  if (Array.isArray(value)) {
    if (isObject(s.items))
      value.forEach((v, i) => {
        walk(v, s.items, `${path}[${i}]`, unknown);
      });
    return;
  }
  if (!isObject(value)) return;
  const resource = root || s['x-kubernetes-embedded-resource'] === true;
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true || s.additionalProperties === true;
  const properties: Record<string, any> | undefined = isObject(s.properties) ? s.properties : undefined;
  const additional = isObject(s.additionalProperties) ? s.additionalProperties : undefined;
  if (resource) pruneMeta(value.metadata, child(path, 'metadata'), unknown);
  for (const key of Object.keys(value)) {
    if (resource && key === 'metadata') continue; // ObjectMeta, whatever the schema says
    const sub = properties?.[key] ?? additional;
    if (sub === undefined) {
      if (resource && RESOURCE_FIELDS.has(key)) continue;
      if (!preserve && (properties || s.type === 'object')) {
        delete value[key];
        unknown.push(child(path, key));
      }
      continue;
    }
    if (value[key] === null && sub.nullable !== true) {
      delete value[key]; // a null in a non-nullable field is dropped (and may be defaulted below)
      continue;
    }
    walk(value[key], sub, child(path, key), unknown);
  }
  for (const [key, sub] of Object.entries(properties ?? {})) {
    if (value[key] !== undefined || !isObject(sub) || sub.default === undefined) continue;
    value[key] = structuredClone(sub.default);
    walk(value[key], sub, child(path, key), unknown);
  }
}

// --- validation -------------------------------------------------------------------------------

/** The schema as ajv reads it: descriptions, defaults and Kubernetes extensions gone, nullable as a type. */
function forAjv(s: any): any {
  if (Array.isArray(s)) return s.map(forAjv);
  if (!isObject(s)) return s;
  const out: Record<string, any> = {};
  const intOrString = s['x-kubernetes-int-or-string'] === true;
  for (const [k, v] of Object.entries(s)) {
    if (
      k.startsWith('x-kubernetes-') ||
      ['description', 'default', 'example', 'externalDocs', 'title'].includes(k)
    )
      continue;
    if (k === 'format' || k === 'nullable') continue;
    if (intOrString && (k === 'anyOf' || k === 'type')) continue; // checked by extraErrors
    if (k === 'properties')
      out.properties = Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, forAjv(ps)]));
    else out[k] = forAjv(v);
  }
  if (s.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

/** The sub-schemas of a schema node (properties' values, items, additionalProperties, not, *Of), rewritten. */
function mapSubSchemas(s: Record<string, any>, f: (sub: any) => any): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'properties' && isObject(v))
      out[k] = Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, f(ps)]));
    else if ((k === 'items' || k === 'additionalProperties' || k === 'not') && isObject(v)) out[k] = f(v);
    else if ((k === 'anyOf' || k === 'allOf' || k === 'oneOf') && Array.isArray(v)) out[k] = v.map(f);
    else out[k] = v;
  }
  return out;
}

/** Moves repeated large sub-schemas (pod templates…) to $defs so ajv compiles each once. */
function dedupe(schema: any): any {
  const counts = new Map<string, number>();
  const count = (s: any): any => {
    if (!isObject(s)) return s;
    const text = JSON.stringify(s);
    if (text.length > 1500) counts.set(text, (counts.get(text) ?? 0) + 1);
    mapSubSchemas(s, count);
    return s;
  };
  count(schema);
  const defs: Record<string, any> = {};
  const names = new Map<string, string>();
  const rewrite = (s: any, top = false): any => {
    if (!isObject(s)) return s;
    if (!top) {
      const text = JSON.stringify(s);
      if ((counts.get(text) ?? 0) > 1) {
        let name = names.get(text);
        if (!name) {
          name = `d${names.size}`;
          names.set(text, name);
          defs[name] = rewrite(JSON.parse(text), true);
        }
        return { $ref: `#/$defs/${name}` };
      }
    }
    return mapSubSchemas(s, (sub) => rewrite(sub));
  };
  const out = rewrite(schema, true);
  if (names.size > 0) out.$defs = defs;
  return out;
}

const compiled = new Map<string, ValidateFunction>();
const bySchema = new WeakMap<object, ValidateFunction>();

function validatorFor(schema: any): ValidateFunction {
  const known = bySchema.get(schema);
  if (known) return known;
  const key = createHash('sha1').update(JSON.stringify(schema)).digest('hex');
  let fn = compiled.get(key);
  if (!fn) {
    const ajv = new Ajv({
      strict: false,
      allErrors: true,
      verbose: true,
      validateFormats: false,
      inlineRefs: false, // with code.optimize off: a large CRD compiles 2-3 times faster
      code: { optimize: false },
    });
    fn = ajv.compile(dedupe(forAjv(schema)));
    compiled.set(key, fn);
  }
  bySchema.set(schema, fn);
  return fn;
}

const quote = (v: unknown) => JSON.stringify(v);
const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** `/spec/replicatedJobs/0/replicas` → `spec.replicatedJobs[0].replicas`, by the shape of the data. */
function fieldPath(obj: any, pointer: string): string {
  let path = '';
  let node = obj;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = Array.isArray(node) ? `${path}[${key}]` : child(path, key);
    node = node?.[key];
  }
  return path;
}

function describe(obj: any, e: ErrorObject): string | undefined {
  const p = fieldPath(obj, e.instancePath);
  const at = p || '<root>';
  const v = e.data;
  const params: any = e.params;
  switch (e.keyword) {
    case 'type':
      return `${at}: Invalid value: "${typeName(v)}": ${at} in body must be of type ${String(params.type).replace(',null', '')}: "${typeName(v)}"`;
    case 'required':
      return `${child(p, params.missingProperty)}: Required value`;
    case 'enum':
      return `${at}: Unsupported value: ${quote(v)}: supported values: ${(params.allowedValues ?? []).map(quote).join(', ')}`;
    case 'minimum':
    case 'exclusiveMinimum':
      return `${at}: Invalid value: ${quote(v)}: ${at} in body should be greater than ${e.keyword === 'minimum' ? 'or equal to ' : ''}${params.limit}`;
    case 'maximum':
    case 'exclusiveMaximum':
      return `${at}: Invalid value: ${quote(v)}: ${at} in body should be less than ${e.keyword === 'maximum' ? 'or equal to ' : ''}${params.limit}`;
    case 'pattern':
      return `${at}: Invalid value: ${quote(v)}: ${at} in body should match '${params.pattern}'`;
    case 'maxLength':
      return `${at}: Too long: may not be more than ${params.limit} bytes`;
    case 'minLength':
      return `${at}: Invalid value: ${quote(v)}: ${at} in body should be at least ${params.limit} chars long`;
    case 'maxItems':
      return `${at}: Too many: ${(v as unknown[]).length}: must have at most ${params.limit} items`;
    case 'minItems':
      return `${at}: Invalid value: ${(v as unknown[]).length}: ${at} in body should have at least ${params.limit} items`;
    case 'maxProperties':
      return `${at}: Too many: ${Object.keys(v as object).length}: must have at most ${params.limit} items`;
    case 'minProperties':
      return `${at}: Invalid value: ${Object.keys(v as object).length}: ${at} in body should have at least ${params.limit} properties`;
    case 'multipleOf':
      return `${at}: Invalid value: ${quote(v)}: ${at} in body should be a multiple of ${params.multipleOf}`;
    case 'uniqueItems':
      return `${at}[${params.i}]: Duplicate value: ${quote((v as unknown[])[params.i])}`;
    default:
      return `${at}: Invalid value: ${quote(v)}: ${e.message ?? e.keyword}`;
  }
}

/** Errors ajv cannot find: int-or-string, list-type uniqueness, embedded resources, `self == oldSelf`. */
function extraErrors(value: unknown, old: unknown, s: any, path: string, out: string[], root = false): void {
  if (!isObject(s) || value === undefined || value === null) return;
  const at = path || '<root>';
  if (s['x-kubernetes-int-or-string'] === true && typeof value !== 'string' && !Number.isInteger(value))
    out.push(
      `${at}: Invalid value: "${typeName(value)}": ${at} in body must be of type integer-or-string: "${typeName(value)}"`,
    );
  for (const rule of s['x-kubernetes-validations'] ?? [])
    if (String(rule.rule).replace(/\s/g, '') === 'self==oldSelf' && old !== undefined && old !== null)
      if (JSON.stringify(value) !== JSON.stringify(old))
        out.push(
          `${at}: Invalid value: "${typeName(value)}": ${rule.message ?? 'failed rule: self == oldSelf'}`,
        );
  if (Array.isArray(value)) {
    const listType = s['x-kubernetes-list-type'];
    const keys: string[] = s['x-kubernetes-list-map-keys'] ?? [];
    const seen = new Set<string>();
    value.forEach((item, i) => {
      const key =
        listType === 'set'
          ? JSON.stringify(item)
          : listType === 'map' && isObject(item)
            ? JSON.stringify(Object.fromEntries(keys.map((k) => [k, item[k]])))
            : undefined;
      if (key !== undefined && seen.has(key)) out.push(`${path}[${i}]: Duplicate value: ${key}`);
      if (key !== undefined) seen.add(key);
      const before =
        listType === 'map' && Array.isArray(old)
          ? old.find((o) => isObject(o) && isObject(item) && keys.every((k) => o[k] === item[k]))
          : undefined;
      extraErrors(item, before, s.items, `${path}[${i}]`, out);
    });
    return;
  }
  if (!isObject(value)) return;
  if (!root && s['x-kubernetes-embedded-resource'] === true)
    for (const field of ['apiVersion', 'kind'])
      if (!value[field]) out.push(`${child(path, field)}: Required value: must not be empty`);
  const oldObject = isObject(old) ? old : {};
  for (const [key, v] of Object.entries(value)) {
    const sub = isObject(s.properties)
      ? (s.properties[key] ?? s.additionalProperties)
      : s.additionalProperties;
    extraErrors(v, oldObject[key], sub, child(path, key), out);
  }
}

/** Every schema violation of `obj` (`old`: the stored object, for transition rules), in the real server's words. */
export function schemaErrors(obj: any, schema: any, old?: any): string[] {
  const out: string[] = [];
  const validate = validatorFor(schema);
  if (!validate(obj)) {
    const errors = validate.errors ?? [];
    const branches = new Set(
      errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.schemaPath),
    );
    for (const e of errors) {
      const inBranch = [...branches].some((b) => e.schemaPath.startsWith(`${b}/`));
      const text = inBranch ? undefined : describe(obj, e);
      if (text && !out.includes(text)) out.push(text);
    }
  }
  extraErrors(obj, old, schema, '', out, true);
  return out;
}

/** Compiles the schema now (so the first write does not pay for it). */
export function precompile(schema: any): void {
  validatorFor(schema);
}
