/**
 * CustomResourceDefinitions (apiextensions.k8s.io/v1) as the test API server serves them:
 * - loading: YAML files (multi-document) or a directory of `*.yaml`, parsed once per process;
 * - a CRD's own rules (name `<plural>.<group>`, scope, one storage version, a schema per version) and
 *   the status the server gives it (acceptedNames, NamesAccepted / Established, storedVersions);
 * - the registry of a server: each served version of each CRD becomes a resource type (discovery,
 *   REST paths); objects are stored in the storage version (conversion strategy None: only apiVersion
 *   changes between versions) and validated against the version they were written through.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { WEBHOOKS } from './crd-controllers/webhooks.js';
import { pruneAndDefault, schemaErrors } from './crd-schema.js';
import { ApiError, invalid, type ResourceType, typeByKind } from './resources.js';

const parsed = new Map<string, { stamp: string; docs: any[] }>();

function parseFile(path: string): any[] {
  const st = statSync(path);
  const stamp = `${st.mtimeMs}|${st.size}`;
  const cached = parsed.get(path);
  if (cached?.stamp === stamp) return cached.docs;
  const docs = loadAllYaml(readFileSync(path, 'utf8')).filter(Boolean);
  parsed.set(path, { stamp, docs });
  return docs;
}

/** The CRDs in these files, or in every `*.yaml` / `*.yml` of a directory (deep copies). */
export function loadCrdFiles(paths: string | string[]): any[] {
  const files = (Array.isArray(paths) ? paths : [paths]).flatMap((p) =>
    statSync(p).isDirectory()
      ? readdirSync(p)
          .filter((f) => /\.ya?ml$/.test(f))
          .sort()
          .map((f) => join(p, f))
      : [p],
  );
  return files
    .flatMap(parseFile)
    .filter((d) => d?.kind === 'CustomResourceDefinition')
    .map((d) => structuredClone(d));
}

/** A CRD given as YAML text (one or more documents) or as an object. */
export function parseCrds(input: string | object): any[] {
  const docs = typeof input === 'string' ? loadAllYaml(input).filter(Boolean) : [structuredClone(input)];
  return docs.map((d: any) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    ...d,
  }));
}

const quote = (v: unknown) => JSON.stringify(v);

/** The rules of apiextensions validation that matter here, in its words. */
export function crdErrors(crd: any): string[] {
  const out: string[] = [];
  const spec = crd.spec ?? {};
  const names = spec.names ?? {};
  const expected = `${names.plural}.${spec.group}`;
  if (crd.metadata?.name !== expected)
    out.push(
      `metadata.name: Invalid value: ${quote(crd.metadata?.name)}: must be spec.names.plural+"."+spec.group`,
    );
  if (!spec.group) out.push('spec.group: Required value');
  else if (!String(spec.group).includes('.'))
    out.push(`spec.group: Invalid value: ${quote(spec.group)}: should be a domain with at least one dot`);
  for (const field of ['plural', 'kind']) if (!names[field]) out.push(`spec.names.${field}: Required value`);
  if (names.kind && typeByKind(names.kind) && !spec.group?.endsWith('.k8s.io'))
    out.push(
      `spec.names.kind: Invalid value: ${quote(names.kind)}: is served by this test API server already`,
    );
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster')
    out.push(
      `spec.scope: Unsupported value: ${quote(spec.scope)}: supported values: "Cluster", "Namespaced"`,
    );
  const versions: any[] = spec.versions ?? [];
  if (versions.length === 0)
    out.push('spec.versions: Invalid value: null: must have exactly one version marked as storage version');
  else if (versions.filter((v) => v.storage === true).length !== 1)
    out.push(
      `spec.versions: Invalid value: ${quote(versions.map((v) => v.name))}: must have exactly one version marked as storage version`,
    );
  versions.forEach((v, i) => {
    const schema = v.schema?.openAPIV3Schema;
    if (!schema) out.push(`spec.versions[${i}].schema.openAPIV3Schema: Required value: schemas are required`);
    else if (schema.type !== 'object')
      out.push(`spec.versions[${i}].schema.openAPIV3Schema.type: Required value: must be object at the root`);
  });
  return out;
}

/** The status a CRD gets from the server once its names are accepted. */
export function crdStatus(crd: any, previous?: any): any {
  const spec = crd.spec;
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const keep = (type: string) =>
    previous?.conditions?.find((c: any) => c.type === type)?.lastTransitionTime ?? now;
  const storage = spec.versions.find((v: any) => v.storage)?.name;
  return {
    acceptedNames: { singular: spec.names.kind.toLowerCase(), ...spec.names },
    conditions: [
      {
        type: 'NamesAccepted',
        status: 'True',
        reason: 'NoConflicts',
        message: 'no conflicts found',
        lastTransitionTime: keep('NamesAccepted'),
      },
      {
        type: 'Established',
        status: 'True',
        reason: 'InitialNamesAccepted',
        message: 'the initial names have been accepted',
        lastTransitionTime: keep('Established'),
      },
    ],
    storedVersions: [...new Set([...(previous?.storedVersions ?? []), storage])],
  };
}

export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

/** The custom resource types one server serves. */
export class CrdRegistry {
  private readonly byCrd = new Map<string, ResourceType[]>();
  private list: ResourceType[] = [];

  /** Serves (or re-serves, after an update) the versions of a stored CRD. */
  register(crd: any): void {
    const spec = crd.spec;
    if (!spec?.names?.kind || !spec.names.plural || !Array.isArray(spec.versions)) return; // stored unvalidated
    const kind: string = spec.names.kind;
    const types = (spec.versions as any[])
      .filter((v) => v.served !== false || v.storage)
      .map(
        (v): ResourceType => ({
          kind,
          group: spec.group,
          version: v.name,
          plural: spec.names.plural,
          singular: spec.names.singular || kind.toLowerCase(),
          namespaced: spec.scope === 'Namespaced',
          hasStatus: v.subresources?.status !== undefined,
          ...(v.storage ? {} : { storedAs: kind }),
          ...(spec.names.shortNames ? { shortNames: spec.names.shortNames } : {}),
          ...(spec.names.categories ? { categories: spec.names.categories } : {}),
          ...(v.subresources?.scale
            ? { subresources: { scale: ['Scale', 'autoscaling', 'v1', ['get', 'patch', 'update']] } }
            : {}),
          custom: {
            crd: crd.metadata.name,
            schema: v.schema.openAPIV3Schema,
            storage: !!v.storage,
            served: v.served !== false,
          },
        }),
      );
    this.byCrd.set(crd.metadata.name, types);
    this.list = [...this.byCrd.values()].flat();
  }

  unregister(crdName: string): void {
    this.byCrd.delete(crdName);
    this.list = [...this.byCrd.values()].flat();
  }

  /** Every custom type (all served versions, and unserved storage ones). */
  all(): readonly ResourceType[] {
    return this.list;
  }

  /** The storage type of a custom kind. */
  byKind(kind: string): ResourceType | undefined {
    const wanted = kind.toLowerCase();
    return this.list.find((t) => !t.storedAs && t.kind.toLowerCase() === wanted);
  }

  /** The kind a CRD serves, by the CRD's name. */
  kindOf(crdName: string): string | undefined {
    return this.byCrd.get(crdName)?.[0]?.kind;
  }

  /** Whether a CRD serving this kind is installed (what a controller waits for). */
  served(kind: string): boolean {
    return this.byKind(kind) !== undefined;
  }

  private versionType(obj: any): ResourceType | undefined {
    const t = this.byKind(String(obj?.kind));
    if (!t) return undefined;
    const [group, version] = String(obj.apiVersion ?? '').split('/');
    return this.list.find((v) => v.kind === t.kind && v.group === group && v.version === version) ?? t;
  }

  /**
   * Prunes and defaults a custom object along the schema of the version it was written in and puts it in
   * the storage version. Returns the unknown fields it dropped.
   */
  prepare(obj: any): string[] {
    const t = this.versionType(obj);
    if (!t?.custom) return [];
    const unknown = pruneAndDefault(obj, t.custom.schema);
    const storage = this.byKind(t.kind)!;
    obj.apiVersion = `${storage.group}/${storage.version}`;
    return unknown;
  }

  /**
   * What is wrong with an object about to be stored as far as CRDs go: a custom object against the schema of
   * the version it was written in (`old`: the stored one, for transition rules), a CRD against its own rules.
   */
  problems(obj: any, type: ResourceType, old?: any, writtenAs?: string): string[] {
    if (type.kind === 'CustomResourceDefinition') return crdErrors(obj);
    if (!type.custom) return [];
    const t = this.versionType(writtenAs ? { ...obj, apiVersion: writtenAs } : obj);
    return t?.custom ? schemaErrors(obj, t.custom.schema, old) : [];
  }
}

/**
 * A custom object as the apiextensions server decodes a write: pruned and defaulted along its version's
 * schema (unknown fields warned about, or refused with fieldValidation=Strict, as always for the server's
 * own writes), then its kind's mutating webhook (not for /status writes).
 */
export function decodeCustom(
  crds: CrdRegistry,
  obj: any,
  t: ResourceType,
  writer: 'client' | 'status' | 'system',
  options: { fieldValidation?: FieldValidation; warnings?: string[] },
  old?: any,
): void {
  const writtenAs = obj.apiVersion;
  const unknown = crds.prepare(obj);
  const mode = writer === 'system' ? 'Strict' : (options.fieldValidation ?? 'Warn');
  if (unknown.length && mode === 'Strict') {
    const [, version] = String(writtenAs).split('/');
    throw new ApiError(
      400,
      'BadRequest',
      `${t.kind} in version "${version ?? t.version}" cannot be handled as a ${t.kind}: strict decoding error: ${unknown.map((u) => `unknown field "${u}"`).join(', ')}`,
    );
  }
  if (mode === 'Warn') for (const u of unknown) options.warnings?.push(`unknown field "${u}"`);
  const webhook = WEBHOOKS[t.kind];
  if (webhook?.mutate && writer !== 'status') {
    webhook.mutate(obj, old);
    obj.apiVersion = writtenAs;
    crds.prepare(obj);
  }
}

/** The refusal of a custom kind's validating webhook (`admission webhook "…" denied the request: …`). */
export function webhookDenial(t: ResourceType, obj: any, old?: any): ApiError | undefined {
  const webhook = WEBHOOKS[t.kind];
  const denied = webhook?.validate?.(obj, old) ?? [];
  if (!webhook || denied.length === 0) return undefined;
  const prefix = `admission webhook "${webhook.name}" denied the request`;
  if (webhook.refusal === 'denied') {
    const text = denied.length === 1 ? denied[0] : `[${denied.join(', ')}]`;
    return new ApiError(403, 'Forbidden', `${prefix}: ${text}`);
  }
  const refusal = invalid(t, String(obj.metadata?.name ?? ''), denied);
  return new ApiError(422, 'Invalid', `${prefix}: ${refusal.message}`, refusal.details);
}
