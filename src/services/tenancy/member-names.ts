import type { Membership } from '../../persistence/tenancy/index.js';

/**
 * A member's name as their tenant sees it: the name typed when they were added, until they
 * accept (acceptMembership); then their own profile name.
 */
export function memberName(membership: Membership): string {
  return membership.invitedName ?? membership.user.name;
}
