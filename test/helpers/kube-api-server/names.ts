/**
 * The name and label rules a real API server checks (k8s.io/apimachinery/pkg/util/validation), with
 * its messages: most objects are named as DNS-1123 subdomains (≤ 253), a Namespace as a DNS-1123
 * label (≤ 63), a Service as a DNS-1035 label (≤ 63, starting with a letter); label values ≤ 63.
 * A Job's name also becomes its pods' `job-name` label (so ≤ 63) and, for an Indexed Job, the
 * hostname `<name>-<index>` of its pods (a DNS label).
 */

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const SUBDOMAIN = `${LABEL}(\\.${LABEL})*`;
const DNS1035 = '[a-z]([-a-z0-9]*[a-z0-9])?';
const QUALIFIED = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_VALUE = '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?';

const full = (re: string) => new RegExp(`^${re}$`);
const quote = (s: string) => JSON.stringify(s);

export function dns1123LabelErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!full(LABEL).test(value))
    errs.push(
      `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '${LABEL}')`,
    );
  return errs;
}

export function dns1123SubdomainErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 253) errs.push('must be no more than 253 characters');
  if (!full(SUBDOMAIN).test(value))
    errs.push(
      `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '${SUBDOMAIN}')`,
    );
  return errs;
}

export function dns1035LabelErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!full(DNS1035).test(value))
    errs.push(
      `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '${DNS1035}')`,
    );
  return errs;
}

function labelValueErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!full(LABEL_VALUE).test(value))
    errs.push(
      `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '${LABEL_VALUE}')`,
    );
  return errs;
}

/** A label or annotation key: `[prefix/]name`, the prefix a DNS subdomain, the name ≤ 63. */
function qualifiedNameErrors(key: string): string[] {
  const parts = key.split('/');
  const name = parts.length === 2 ? parts[1]! : parts[0]!;
  const errs: string[] = [];
  if (parts.length > 2 || name.length === 0 || !full(QUALIFIED).test(name))
    errs.push(
      `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '${QUALIFIED}')`,
    );
  if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (parts.length === 2) errs.push(...dns1123SubdomainErrors(parts[0]!).map((e) => `prefix part ${e}`));
  return errs;
}

/** Errors of a label map at `path` (`metadata.labels`, `spec.template.labels`). */
export function labelErrors(labels: Record<string, unknown> | undefined, path: string): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(labels ?? {})) {
    for (const e of qualifiedNameErrors(key)) out.push(`${path}: Invalid value: ${quote(key)}: ${e}`);
    if (typeof value === 'string')
      for (const e of labelValueErrors(value)) out.push(`${path}: Invalid value: ${quote(value)}: ${e}`);
  }
  return out;
}

function annotationErrors(annotations: Record<string, unknown> | undefined, path: string): string[] {
  return Object.keys(annotations ?? {}).flatMap((key) =>
    qualifiedNameErrors(key.toLowerCase()).map((e) => `${path}: Invalid value: ${quote(key)}: ${e}`),
  );
}

const NAME_RULES: Record<string, (v: string) => string[]> = {
  Namespace: dns1123LabelErrors,
  Service: dns1035LabelErrors,
};

function podSpecNameErrors(spec: any, path: string): string[] {
  const out: string[] = [];
  for (const field of ['hostname', 'subdomain']) {
    const value = spec?.[field];
    if (typeof value === 'string' && value !== '')
      for (const e of dns1123LabelErrors(value))
        out.push(`${path}.${field}: Invalid value: ${quote(value)}: ${e}`);
  }
  return out;
}

/** The name, label and hostname errors of an object about to be stored, in the real server's words. */
export function nameErrors(obj: any): string[] {
  const out: string[] = [];
  const name = String(obj.metadata?.name ?? '');
  const rule = NAME_RULES[obj.kind] ?? dns1123SubdomainErrors;
  for (const e of rule(name)) out.push(`metadata.name: Invalid value: ${quote(name)}: ${e}`);
  out.push(...labelErrors(obj.metadata?.labels, 'metadata.labels'));
  out.push(...annotationErrors(obj.metadata?.annotations, 'metadata.annotations'));
  if (obj.kind === 'Pod') out.push(...podSpecNameErrors(obj.spec, 'spec'));
  if (obj.kind === 'Job') {
    const template = obj.spec?.template;
    out.push(...labelErrors(template?.metadata?.labels, 'spec.template.labels'));
    out.push(...podSpecNameErrors(template?.spec, 'spec.template.spec'));
    const completions = obj.spec?.completions;
    if (obj.spec?.completionMode === 'Indexed' && typeof completions === 'number' && completions > 0) {
      const hostname = `${name}-${completions - 1}`;
      if (dns1123LabelErrors(hostname).length > 0)
        out.push(
          `metadata.name: Invalid value: ${quote(name)}: will not able to create pod with invalid DNS label: ${hostname}`,
        );
    }
  }
  return out;
}
