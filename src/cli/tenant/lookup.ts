// Names a person types (a tenant slug) turned into the IDs the graph takes.
import { type CliContext, CliError, EXIT } from './context.js';
import { send, TenantBySlug, WhoAmI } from './operations.js';

export function requireToken(ctx: CliContext): void {
  if (!ctx.token)
    throw new CliError(
      `not logged in: run 'fairway login --server URL --token-stdin' or set FAIRWAY_TOKEN`,
      EXIT.AUTH,
    );
}

/**
 * The tenant a command works in: --tenant SLUG (or FAIRWAY_TENANT), else the caller's only
 * tenant (an API token always has exactly one).
 */
export async function resolveTenant(
  ctx: CliContext,
  slug: string | undefined,
): Promise<{ id: string; slug: string }> {
  requireToken(ctx);
  const wanted = slug ?? ctx.env.FAIRWAY_TENANT;
  const { viewer } = await send(ctx, WhoAmI, {});
  const tenants = viewer.memberships.map((m) => m.tenant);
  if (wanted) {
    const found = tenants.find((t) => t.slug === wanted);
    if (found) return found;
    // A platform admin reads tenants they do not belong to; anyone else gets NOT_FOUND from the server.
    return (await send(ctx, TenantBySlug, { slug: wanted })).tenant;
  }
  if (tenants.length === 1) return tenants[0]!;
  if (tenants.length === 0) throw new CliError('you belong to no tenant: pass --tenant SLUG', EXIT.USAGE);
  throw new CliError(
    `you belong to ${tenants.length} tenants (${tenants.map((t) => t.slug).join(', ')}): pass --tenant SLUG or set FAIRWAY_TENANT`,
    EXIT.USAGE,
  );
}
