// Cluster text (Kubernetes Events) as a tenant may read it: no other tenant's id or name.

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/** A taint as kube-scheduler writes it, `{key: value}`: a dedicated node's value is a tenant's id. */
const TAINT = /\{([^:{}]+):[^{}]*\}/g;

export interface ScrubContext {
  /** Ids that may show (the job's own, its tenant's). */
  keepIds: readonly string[];
  /** Names that must not (every other tenant's slug and namespace), replaced by `<another tenant>`. */
  otherNames: readonly string[];
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The text with taint values dropped, other ids replaced, and other tenants' names replaced. */
export function scrubClusterText(text: string, ctx: ScrubContext): string {
  const own = new Set(ctx.keepIds.map((k) => k.toLowerCase()));
  let out = text
    .replace(TAINT, (_all, key: string) => `{${key.trim()}}`)
    .replace(UUID, (id) => (own.has(id.toLowerCase()) ? id : '<another id>'));
  const names = [...new Set(ctx.otherNames.filter((n) => n.length > 0))].sort((a, b) => b.length - a.length);
  if (names.length) {
    // Longest first, between non-alphanumerics: inside a namespace (`fairway-borealis`) too. A short
    // slug may hide a word that only looks like it: more is hidden, never less.
    const pattern = new RegExp(
      `(?<![A-Za-z0-9])(?:${names.map(escapeRegExp).join('|')})(?![A-Za-z0-9])`,
      'gi',
    );
    out = out.replace(pattern, '<another tenant>');
  }
  return out;
}
