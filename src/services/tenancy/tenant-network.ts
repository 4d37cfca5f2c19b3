import net from 'node:net';
import { Tenant } from '../../persistence/tenancy/index.js';
import { badInput, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requirePlatformAdmin, type ServiceContext } from '../context.js';

/**
 * Where a tenant's pods may open connections: a list of CIDRs set by platform admins and
 * enforced by the Kubernetes backend's NetworkPolicy. Null is unrestricted egress; an
 * empty list allows nothing but DNS.
 */

export const MAX_EGRESS_ENTRIES = 64;

export type CidrResult = { ok: true; cidr: string } | { ok: false; problem: string };

const PREFIX = /^(0|[1-9][0-9]{0,2})$/;

/**
 * One allowlist entry in canonical form: `10.0.0.0/8`, `2001:db8::/32`; a bare address is
 * one host (/32 or /128). Addresses are checked by node:net and IPv6 is written the way
 * the WHATWG URL serializer writes it (lowercase, zeros compressed, RFC 5952). An entry
 * with bits set below its prefix (`10.0.0.1/8`) is refused rather than widened or
 * narrowed silently: the admin says which was meant.
 */
export function normaliseCidr(entry: string): CidrResult {
  const text = entry.trim();
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const prefixText = slash < 0 ? null : text.slice(slash + 1);
  const family = net.isIPv4(address) ? 4 : net.isIPv6(address) && !address.includes('%') ? 6 : null;
  if (family === null)
    return {
      ok: false,
      problem: `"${entry}" is not an IPv4 or IPv6 address or CIDR (write e.g. 10.0.0.0/8, 2001:db8::/32 or 192.0.2.7)`,
    };
  const bits = family === 4 ? 32 : 128;
  if (prefixText !== null && (!PREFIX.test(prefixText) || Number(prefixText) > bits)) {
    return { ok: false, problem: `"${entry}" has a malformed prefix length (0 to ${bits} for IPv${family})` };
  }
  const prefix = prefixText === null ? bits : Number(prefixText);
  const canonical = family === 4 ? address : new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const network = networkAddress(canonical, family, prefix);
  if (network !== canonical)
    return {
      ok: false,
      problem: `"${entry}" has address bits set below its /${prefix} prefix: write ${network}/${prefix} for the network, or ${canonical}/${bits} for the one address`,
    };
  return { ok: true, cidr: `${canonical}/${prefix}` };
}

/** The address with every bit below the prefix cleared, in the same canonical text. */
function networkAddress(canonical: string, family: 4 | 6, prefix: number): string {
  // The address was validated by node:net and canonicalised; only its groups are read here.
  const groups = family === 4 ? canonical.split('.').map(Number) : ipv6Groups(canonical);
  const width = family === 4 ? 8 : 16;
  const masked = groups.map((value, i) => {
    const keep = Math.max(0, Math.min(width, prefix - i * width));
    return keep === 0 ? 0 : value & (((1 << width) - 1) ^ ((1 << (width - keep)) - 1));
  });
  if (family === 4) return masked.join('.');
  return new URL(`http://[${masked.map((g) => g.toString(16)).join(':')}]/`).hostname.slice(1, -1);
}

/** The eight 16-bit groups of a canonical IPv6 address (hex groups only, at most one "::"). */
function ipv6Groups(canonical: string): number[] {
  const [head = '', tail] = canonical.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16));
}

/** A whole list checked and canonical, duplicates dropped; the first bad entry's problem instead. */
export function normaliseEgressAllowlist(
  cidrs: string[] | null,
): { ok: true; list: string[] | null } | { ok: false; problem: string; entry?: string } {
  if (cidrs === null) return { ok: true, list: null };
  if (cidrs.length > MAX_EGRESS_ENTRIES)
    return { ok: false, problem: `at most ${MAX_EGRESS_ENTRIES} entries (got ${cidrs.length})` };
  const out: string[] = [];
  for (const entry of cidrs) {
    const result = normaliseCidr(entry);
    if (!result.ok) return { ok: false, problem: result.problem, entry };
    if (!out.includes(result.cidr)) out.push(result.cidr);
  }
  return { ok: true, list: out };
}

/**
 * Platform admins set where a tenant's pods may connect to (null: anywhere; []: DNS only).
 * Authorised and audited as setTenantDataBoundaries: everyone else is FORBIDDEN before the
 * tenant is looked up, so a tenant admin learns nothing of other tenants' ids. The audit
 * event records the list before and after. The scheduler is told afterwards so the
 * Kubernetes backend reconciles the tenant's NetworkPolicy.
 */
export async function setTenantEgressAllowlist(
  ctx: ServiceContext,
  tenantId: string,
  cidrs: string[] | null,
): Promise<Tenant> {
  // auditedMutation builds the event after the work, so what the work adds here is recorded.
  const auditInput: Record<string, unknown> = { tenantId, cidrs };
  const tenant = await auditedMutation(
    ctx,
    { action: 'tenant.setEgressAllowlist', input: auditInput, tenantHint: tenantId },
    async (em) => {
      requirePlatformAdmin(ctx);
      const found = await em.findOne(Tenant, { id: tenantId });
      if (!found) throw notFound('Tenant');
      const result = normaliseEgressAllowlist(cidrs);
      if (!result.ok)
        throw badInput(`Egress allowlist: ${result.problem}.`, {
          field: 'cidrs',
          ...(result.entry !== undefined ? { entry: result.entry } : {}),
        });
      auditInput.before = found.egressAllowlist ?? null;
      auditInput.after = result.list;
      found.egressAllowlist = result.list;
      await em.flush();
      return { result: found, tenantId: found.id, targetType: 'Tenant', targetId: found.id };
    },
  );
  ctx.scheduler.announce({ kind: 'config' });
  return tenant;
}
