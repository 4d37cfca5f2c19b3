// Tenant network policy in the graph: the egress allowlist (platform admins).
import { z } from 'zod';
import { MAX_EGRESS_ENTRIES, setTenantEgressAllowlist } from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { TenantRef } from '../refs.js';

builder.objectFields(TenantRef, (t) => ({
  egressAllowlist: t.stringList({
    nullable: true,
    description:
      "Where the tenant's pods may open connections (CIDRs, canonical form). Null: unrestricted; empty: nothing but DNS. Enforced by the Kubernetes backend's NetworkPolicy.",
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'tenant:read' } }),
    resolve: (tenant) => tenant.egressAllowlist ?? null,
  }),
}));

builder.mutationFields((t) => ({
  setTenantEgressAllowlist: t.field({
    type: TenantRef,
    description:
      'Platform admins. Replaces the list: null clears it (unrestricted egress), [] allows nothing but DNS. Entries are IPv4 or IPv6 CIDRs; a bare address means that one host (/32 or /128).',
    authScopes: { authenticated: true },
    args: {
      tenantId: t.arg.id({ required: true }),
      cidrs: t.arg.stringList({
        validate: z
          .array(z.string().max(64, 'each entry must be at most 64 characters'))
          .max(MAX_EGRESS_ENTRIES, `at most ${MAX_EGRESS_ENTRIES} entries`),
      }),
    },
    resolve: (_r, args, ctx) =>
      setTenantEgressAllowlist(ctx, decodeId(String(args.tenantId), 'Tenant'), args.cidrs ?? null),
  }),
}));
