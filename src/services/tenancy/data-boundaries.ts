import type { DataBoundaries } from '../../persistence/tenancy/index.js';

export type { DataBoundaries };

/**
 * Where jobs may take images from, read data from and write models to: pure rules, no
 * database. Every reference is normalised first and matched by whole path segments, so
 * an allowed `registry.example.com` never admits `registry.example.com.evil.io/x` or
 * `registry.example.comx/y`, and an allowed `s3://bucket/data` never admits
 * `s3://bucket/data-private` or `s3://bucket/data/../secrets`.
 *
 * A list that is null is not restricted; an empty list allows nothing.
 */

export type BoundaryKind = 'imageRegistries' | 'datasetLocations' | 'artifactStores';
export const BOUNDARY_KINDS: readonly BoundaryKind[] = [
  'imageRegistries',
  'datasetLocations',
  'artifactStores',
];
export const KIND_LABEL: Record<BoundaryKind, string> = {
  imageRegistries: 'image registries',
  datasetLocations: 'dataset locations',
  artifactStores: 'artifact stores',
};

export const UNRESTRICTED: DataBoundaries = {
  imageRegistries: null,
  datasetLocations: null,
  artifactStores: null,
};

/** A reference cut into what matching compares: the first segment (registry or scheme://authority) and the
 * path below it.
 */
export interface Normalised {
  /** Segments compared one by one; the first is the registry host or `scheme://authority`. */
  segments: string[];
  /** The canonical text (segments joined by '/'). */
  text: string;
}

export type Parsed = { ok: true; value: Normalised } | { ok: false; problem: string };

const fail = (problem: string): Parsed => ({ ok: false, problem });
const done = (segments: string[]): Parsed => ({ ok: true, value: { segments, text: segments.join('/') } });

// The Docker reference grammar (distribution/reference): host[:port]/path[:tag][@digest].
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = new RegExp(`^${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*(?::[0-9]{1,5})?$`);
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const DOCKER_HUB = 'docker.io';
const MAX_REFERENCE = 512;

/** Docker's rule for whether the first segment names a registry rather than a Docker Hub namespace. */
function looksLikeRegistry(first: string): boolean {
  return first.includes('.') || first.includes(':') || first === 'localhost' || first.toLowerCase() !== first;
}

function canonicalRegistry(host: string): string {
  const lower = host.toLowerCase();
  return lower === 'index.docker.io' || lower === 'registry-1.docker.io' ? DOCKER_HUB : lower;
}

/**
 * An image reference, normalised the way Docker resolves it: no registry means Docker Hub
 * (`docker.io`), a single name is an official image (`docker.io/library/<name>`). The tag
 * and digest are checked for form and left out: they do not change where the image comes from.
 */
export function parseImage(reference: string): Parsed {
  if (reference.length === 0) return fail('an image reference must not be empty');
  if (reference.length > MAX_REFERENCE)
    return fail(`an image reference must be at most ${MAX_REFERENCE} characters`);
  let rest = reference;
  const at = rest.indexOf('@');
  if (at >= 0) {
    if (!DIGEST.test(rest.slice(at + 1))) return fail(`"${reference}" has a malformed digest`);
    rest = rest.slice(0, at);
  }
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.indexOf(':', lastSlash + 1);
  if (colon >= 0) {
    if (!TAG.test(rest.slice(colon + 1))) return fail(`"${reference}" has a malformed tag`);
    rest = rest.slice(0, colon);
  }
  const parts = rest.split('/');
  let registry = DOCKER_HUB;
  if (parts.length > 1 && looksLikeRegistry(parts[0]!)) {
    if (!DOMAIN.test(parts[0]!)) return fail(`"${reference}" names a malformed registry host`);
    registry = canonicalRegistry(parts.shift()!);
  }
  if (parts.some((p) => !PATH_COMPONENT.test(p)))
    return fail(
      `"${reference}" is not a valid image reference (repository names use lowercase letters, digits and . _ -)`,
    );
  if (registry === DOCKER_HUB && parts.length === 1) parts.unshift('library');
  return done([registry, ...parts]);
}

/**
 * An allowlist entry for images: a registry host, optionally with a repository path
 * below it (`nvcr.io/nvidia`, `docker.io/library`). No tag or digest: an entry says where
 * images may come from, not which one.
 */
export function parseRegistryEntry(entry: string): Parsed {
  const trimmed = entry.replace(/\/+$/, '');
  if (trimmed.length === 0) return fail('a registry entry must not be empty');
  if (trimmed.length > MAX_REFERENCE)
    return fail(`a registry entry must be at most ${MAX_REFERENCE} characters`);
  if (trimmed.includes('@')) return fail(`"${entry}": a registry entry names no digest`);
  const parts = trimmed.split('/');
  const host = parts.shift()!;
  if (!looksLikeRegistry(host) || !DOMAIN.test(host))
    return fail(
      `"${entry}" must start with a registry host (e.g. docker.io/myorg, nvcr.io/nvidia, registry.example.com)`,
    );
  if (parts.some((p) => !PATH_COMPONENT.test(p)))
    return fail(`"${entry}" is not a valid registry path (lowercase letters, digits and . _ -; no tag)`);
  return done([canonicalRegistry(host), ...parts]);
}

const SCHEME_URI = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(.*)$/s;
/**
 * Schemes that name the node's own filesystem (a hostPath volume in Kubernetes): refused
 * whatever the boundaries say, since a job reading or writing there reaches the node and
 * every other tenant's pods on it, not a data store of its own.
 */
const NODE_LOCAL_SCHEMES = new Set(['file', 'hostpath', 'host']);
const NODE_LOCAL_ADVICE =
  "Fairway never mounts the node's own filesystem: use a claim (pvc://claim/path) or a data store (s3://bucket/path)";
const SEGMENT = /^[A-Za-z0-9._~!$&'()*+,;=:-]+$/;
const MAX_LOCATION = 2048;

/**
 * A data location (dataset or artifact store): an absolute URI with an authority
 * (`s3://bucket/prefix`, `gs://bucket`, `pvc://claim/dir`, `nfs://server/export`,
 * `https://host/path`). Refused: paths on the node (`/mnt/x`, `file://`, `hostpath://`,
 * `host://`), whatever any list allows; relative paths, `.` and `..` segments, empty
 * segments, percent-encoding, credentials, queries and fragments: anything that could
 * make two spellings of one place compare differently.
 */
export function parseLocation(location: string): Parsed {
  if (location.length === 0) return fail('a location must not be empty');
  if (location.length > MAX_LOCATION) return fail(`a location must be at most ${MAX_LOCATION} characters`);
  if (location.startsWith('/')) return fail(`"${location}" is a path on the node. ${NODE_LOCAL_ADVICE}`);
  const match = SCHEME_URI.exec(location);
  if (!match)
    return fail(
      `"${location}" is not an absolute URI (write e.g. s3://bucket/path or pvc://claim/path; relative paths are not allowed)`,
    );
  const scheme = match[1]!.toLowerCase();
  if (NODE_LOCAL_SCHEMES.has(scheme))
    return fail(`"${location}": ${scheme}:// reaches the node itself. ${NODE_LOCAL_ADVICE}`);
  const rest = match[2]!.replace(/\/+$/, '');
  if (rest.includes('%'))
    return fail(`"${location}": percent-encoded characters are not allowed in locations`);
  if (/[?#]/.test(rest)) return fail(`"${location}": a location has no query or fragment`);
  if (rest.includes('@')) return fail(`"${location}": credentials do not belong in a location`);
  const parts = rest.split('/');
  const authority = parts.shift()!.toLowerCase();
  if (!authority) return fail(`"${location}" names no bucket, claim or host after ${scheme}://`);
  if (!SEGMENT.test(authority)) return fail(`"${location}" has a malformed bucket, claim or host`);
  for (const part of parts) {
    if (part === '') return fail(`"${location}" has an empty path segment (//)`);
    if (part === '.' || part === '..') return fail(`"${location}" has a "${part}" segment`);
    if (!SEGMENT.test(part)) return fail(`"${location}" has characters not allowed in a location path`);
  }
  return done([`${scheme}://${authority}`, ...parts]);
}

export const parserFor = (kind: BoundaryKind): ((value: string) => Parsed) =>
  kind === 'imageRegistries' ? parseRegistryEntry : parseLocation;

/** Whether `inner` lies at or below `outer`, compared by whole segments. */
export function lies(inner: Normalised, outer: Normalised): boolean {
  return (
    outer.segments.length <= inner.segments.length && outer.segments.every((s, i) => s === inner.segments[i])
  );
}

/** Whether a normalised reference is allowed by a list (null: unrestricted). */
export function allowedBy(reference: Normalised, list: string[] | null, kind: BoundaryKind): boolean {
  if (list === null) return true;
  const parse = parserFor(kind);
  return list.some((entry) => {
    const parsed = parse(entry);
    return parsed.ok && lies(reference, parsed.value);
  });
}

/**
 * Normalises a list given by an admin: each entry valid, canonical, duplicates dropped.
 * Returns the problem of the first bad entry instead.
 */
export function normaliseList(
  list: string[] | null,
  kind: BoundaryKind,
): { ok: true; list: string[] | null } | { ok: false; problem: string } {
  if (list === null) return { ok: true, list: null };
  const out: string[] = [];
  for (const entry of list) {
    const parsed = parserFor(kind)(entry.trim());
    if (!parsed.ok) return { ok: false, problem: parsed.problem };
    if (!out.includes(parsed.value.text)) out.push(parsed.value.text);
  }
  return { ok: true, list: out };
}

/** The entries of a project's list that do not lie within the tenant's list (empty when all do). */
export function entriesOutside(
  projectList: string[] | null,
  tenantList: string[] | null,
  kind: BoundaryKind,
): string[] {
  // A project list that is null narrows nothing: the project keeps the tenant's list.
  if (tenantList === null || projectList === null) return [];
  const parse = parserFor(kind);
  return projectList.filter((entry) => {
    const parsed = parse(entry);
    return !parsed.ok || !allowedBy(parsed.value, tenantList, kind);
  });
}

/**
 * What a project's jobs may actually use: the intersection of the tenant's and the
 * project's lists. Both are sets of prefixes, so the intersection is every entry of one
 * that lies within some entry of the other.
 */
export function effectiveList(
  tenantList: string[] | null,
  projectList: string[] | null,
  kind: BoundaryKind,
): string[] | null {
  if (tenantList === null) return projectList;
  if (projectList === null) return tenantList;
  const parse = parserFor(kind);
  const within = (list: string[], other: string[]) =>
    list.filter((entry) => {
      const parsed = parse(entry);
      return parsed.ok && allowedBy(parsed.value, other, kind);
    });
  return [...new Set([...within(projectList, tenantList), ...within(tenantList, projectList)])];
}

export function effectiveBoundaries(
  tenant: DataBoundaries | null,
  project: DataBoundaries | null,
): DataBoundaries {
  const t = tenant ?? UNRESTRICTED;
  const p = project ?? UNRESTRICTED;
  return {
    imageRegistries: effectiveList(t.imageRegistries, p.imageRegistries, 'imageRegistries'),
    datasetLocations: effectiveList(t.datasetLocations, p.datasetLocations, 'datasetLocations'),
    artifactStores: effectiveList(t.artifactStores, p.artifactStores, 'artifactStores'),
  };
}

/** What a container uses from outside: its image, the datasets it mounts, where it writes models. */
export interface ContainerReferences {
  image: string;
  datasetLocations: string[];
  artifactStore: string | null;
}

export interface Violation {
  kind: BoundaryKind;
  /** The reference as the caller wrote it. */
  reference: string;
  /** Why: a malformed reference, or the list it is not within. */
  problem: string;
  allowed: string[] | null;
}

/** Each reference parsed; the first malformed one is a violation whatever the lists say. */
export function parseReferences(
  refs: ContainerReferences,
):
  | { ok: true; parsed: { kind: BoundaryKind; reference: string; value: Normalised }[] }
  | { ok: false; violation: Violation } {
  const items: { kind: BoundaryKind; reference: string }[] = [
    { kind: 'imageRegistries', reference: refs.image },
    ...refs.datasetLocations.map((reference) => ({ kind: 'datasetLocations' as const, reference })),
    ...(refs.artifactStore !== null
      ? [{ kind: 'artifactStores' as const, reference: refs.artifactStore }]
      : []),
  ];
  const parsed: { kind: BoundaryKind; reference: string; value: Normalised }[] = [];
  for (const item of items) {
    const result =
      item.kind === 'imageRegistries' ? parseImage(item.reference) : parseLocation(item.reference);
    if (!result.ok)
      return {
        ok: false,
        violation: { kind: item.kind, reference: item.reference, problem: result.problem, allowed: null },
      };
    parsed.push({ ...item, value: result.value });
  }
  return { ok: true, parsed };
}

/** The first reference outside the boundaries, or null when all lie within. */
export function firstViolation(
  refs: ContainerReferences,
  boundaries: DataBoundaries | null,
): Violation | null {
  const parsed = parseReferences(refs);
  if (!parsed.ok) return parsed.violation;
  const b = boundaries ?? UNRESTRICTED;
  for (const item of parsed.parsed) {
    const list = b[item.kind];
    if (!allowedBy(item.value, list, item.kind))
      return {
        kind: item.kind,
        reference: item.reference,
        problem: `not within the allowed ${KIND_LABEL[item.kind]}`,
        allowed: list,
      };
  }
  return null;
}
