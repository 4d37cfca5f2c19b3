import {
  type DefaultConnectionArguments,
  type ResolveCursorConnectionArgs,
  resolveCursorConnection,
} from '@pothos/plugin-relay';
import type { PageQuery } from '../../src/services/paging.js';
import { decodeId, pageFrom, toCursor } from '../common.js';

/** Whose list: a stored row's tenant (Tenant.members, Queue.jobs) or a `tenantId` argument (Query.members). */
export type TenantOf = { id: string } | { globalId: string | number };

/**
 * One keyset page of a tenant's rows as a Relay connection. Most lists of a tenant's things
 * are served twice — as a field of Tenant and as a root query with a `tenantId` argument —
 * and both read through `list`, the service call, which checks the caller's rights again.
 *
 * `reader(tenantId)` returns the page read. The steps run in the order the fields always
 * had, so a request with several wrong arguments reports the same one first: the paging
 * arguments, then a `tenantId` argument, then whatever `reader` decodes (a job filter's
 * ids), then the cursor.
 */
export function tenantConnection<Row extends { id: string }>(
  args: DefaultConnectionArguments,
  tenant: TenantOf,
  reader: (tenantId: string) => (page: PageQuery) => Promise<Row[]>,
) {
  return resolveCursorConnection({ args, toCursor }, (page: ResolveCursorConnectionArgs) => {
    const read = reader('globalId' in tenant ? decodeId(String(tenant.globalId), 'Tenant') : tenant.id);
    return read(pageFrom(page));
  });
}
