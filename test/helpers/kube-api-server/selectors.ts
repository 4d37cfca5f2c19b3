/** Label and field selectors as the real API server reads them from list and watch queries. */
import { ApiError } from './resources.js';

type Requirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | '!exists' };

/** Splits on commas outside parentheses: `a in (x,y),b` → [`a in (x,y)`, `b`]. */
function terms(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim()) out.push(current.trim());
  return out.filter((t) => t.length > 0);
}

function parseLabelSelector(selector: string): Requirement[] {
  return terms(selector).map((term): Requirement => {
    let m = /^(\S+?)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (m) return { key: m[1]!, op: m[2] === '!=' ? 'notin' : 'in', values: [m[3]!] };
    m = /^(\S+)\s+(in|notin)\s+\((.*)\)$/.exec(term);
    if (m) return { key: m[1]!, op: m[2] as 'in' | 'notin', values: m[3]!.split(',').map((v) => v.trim()) };
    m = /^(!?)([A-Za-z0-9._/-]+)$/.exec(term);
    if (m) return { key: m[2]!, op: m[1] ? '!exists' : 'exists' };
    throw new ApiError(400, 'BadRequest', `unable to parse requirement: ${term}`);
  });
}

export type Matcher = (obj: any) => boolean;

export function labelMatcher(selector: string | null | undefined): Matcher {
  if (!selector) return () => true;
  const requirements = parseLabelSelector(selector);
  return (obj) => {
    const labels: Record<string, string> = obj?.metadata?.labels ?? {};
    return requirements.every((r) => {
      const has = Object.hasOwn(labels, r.key);
      switch (r.op) {
        case 'exists':
          return has;
        case '!exists':
          return !has;
        case 'in':
          return has && r.values.includes(labels[r.key]!);
        case 'notin':
          return !has || !r.values.includes(labels[r.key]!);
      }
    });
  };
}

/** `metadata.name=x,spec.nodeName!=y`: dotted paths compared as strings (absent reads as ''). */
export function fieldMatcher(selector: string | null | undefined): Matcher {
  if (!selector) return () => true;
  const requirements = terms(selector).map((term) => {
    const m = /^([A-Za-z0-9._]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw new ApiError(400, 'BadRequest', `invalid field selector: ${term}`);
    return { path: m[1]!.split('.'), negate: m[2] === '!=', value: m[3]! };
  });
  return (obj) =>
    requirements.every((r) => {
      let node: any = obj;
      for (const part of r.path) node = node?.[part];
      const actual = node === undefined || node === null ? '' : String(node);
      return (actual === r.value) !== r.negate;
    });
}

/** A metav1.LabelSelector (matchLabels + matchExpressions) against a label map; an empty selector matches all. */
export function selectorMatches(
  selector: { matchLabels?: Record<string, string>; matchExpressions?: any[] } | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (l[k] !== v) return false;
  return (selector?.matchExpressions ?? []).every((e) => {
    const has = Object.hasOwn(l, e.key);
    switch (e.operator) {
      case 'In':
        return has && (e.values ?? []).includes(l[e.key]);
      case 'NotIn':
        return !has || !(e.values ?? []).includes(l[e.key]);
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
      default:
        return false;
    }
  });
}
