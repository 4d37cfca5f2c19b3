// What the quota-request and audit views share: the status in words and the live hook (platform
// admins: quotaRequestUpdates; tenants: their tenantEvents of kind QUOTA_REQUEST/QUOTA_CHANGED).
import { useSubscription } from '@urql/preact';
import type { Viewer } from '../app.js';
import { graphql } from '../graphql.js';
import { useDebounced, useOnReconnect, useRefetchOn } from './live.js';

export const STATUS_WORDS: Record<string, string> = {
  PENDING: 'waiting for a platform admin',
  APPROVED: 'approved, applies at its start',
  ACTIVE: 'approved and applied',
  EXPIRED: 'ended at its expiry',
  REJECTED: 'refused',
  CANCELLED: 'withdrawn',
};

export function Status({ status }: { status: string }) {
  return (
    <span class={`state ${status.toLowerCase()}`} title={STATUS_WORDS[status]}>
      {status}
    </span>
  );
}

const PlatformUpdates = graphql(`subscription ConsoleQuotaUpdates { quotaRequestUpdates { id status } }`);
const TenantQuotaEvents = graphql(`
  subscription ConsoleQuotaTenantEvents($tenantId: ID!) { tenantEvents(tenantId: $tenantId) { kind requestId } }
`);

/** Calls `onChange` (at most every 150 ms) when a request the viewer may see is made or changes. */
export function useQuotaLive(viewer: Viewer, onChange: () => void): void {
  const tenantId = viewer.memberships[0]?.tenant.id;
  const schedule = useDebounced(onChange);
  useRefetchOn(PlatformUpdates, {}, schedule, !viewer.isPlatformAdmin);
  useSubscription(
    { query: TenantQuotaEvents, variables: { tenantId: tenantId ?? '' }, pause: !tenantId },
    (_prev, next) => {
      if (next.tenantEvents.kind === 'QUOTA_REQUEST' || next.tenantEvents.kind === 'QUOTA_CHANGED')
        schedule();
      return next;
    },
  );
  useOnReconnect(schedule);
}
