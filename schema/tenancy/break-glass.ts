import { z } from 'zod';
import {
  closeBreakGlass,
  DEFAULT_DURATION_MINUTES,
  getTenant,
  isGrantActive,
  listBreakGlassGrants,
  MAX_DURATION_MINUTES,
  MIN_DURATION_MINUTES,
  myOpenBreakGlassGrants,
  openBreakGlass,
  REASON_MAX_CHARS,
  REASON_MIN_CHARS,
} from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { BreakGlassGrantRef, TenantRef, ViewerRef } from '../refs.js';
import { isEntity } from './tenant.js';

builder.node(BreakGlassGrantRef, {
  description:
    "A platform admin's time-limited permission to look inside one tenant (job content, e-mails, audit details) and act there as its admin. Opening, every read under it and closing are audited in the tenant's own log.",
  id: { resolve: (grant) => grant.id },
  isTypeOf: (value) => isEntity(value, 'BreakGlassGrant'),
  fields: (t) => ({
    tenant: t.field({ type: TenantRef, resolve: (grant, _args, ctx) => getTenant(ctx, grant.tenant.id) }),
    operatorName: t.string({
      description:
        'The platform admin who opened it: shown to the tenant on purpose, so its auditors know who looked.',
      resolve: (grant) => grant.operator.name,
    }),
    reason: t.exposeString('reason'),
    expiresAt: t.field({ type: 'DateTime', resolve: (grant) => grant.expiresAt }),
    closedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When it was closed early; null if it ran (or runs) its full time.',
      resolve: (grant) => grant.closedAt ?? null,
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (grant) => grant.createdAt }),
    active: t.boolean({
      description: 'Neither closed nor expired.',
      resolve: (grant, _args, ctx) => isGrantActive(grant, ctx.now()),
    }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  breakGlassGrants: t.field({
    type: [BreakGlassGrantRef],
    description:
      'Every break-glass grant for this tenant, newest first: its admins and auditors, and platform admins.',
    resolve: (tenant, _args, ctx) => listBreakGlassGrants(ctx, tenant.id),
  }),
}));

builder.objectFields(ViewerRef, (t) => ({
  breakGlassGrants: t.field({
    type: [BreakGlassGrantRef],
    description: 'Your own open break-glass grants (platform admins).',
    resolve: (_principal, _args, ctx) => myOpenBreakGlassGrants(ctx),
  }),
}));

builder.queryFields((t) => ({
  breakGlassGrants: t.field({
    type: [BreakGlassGrantRef],
    description: "A tenant's break-glass grants, newest first: its admins and auditors, and platform admins.",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }) },
    resolve: (_root, { tenantId }, ctx) => listBreakGlassGrants(ctx, decodeId(String(tenantId), 'Tenant')),
  }),
}));

const OpenBreakGlassInput = builder.inputType('OpenBreakGlassInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    reason: t.string({
      required: true,
      description: 'Why you need to look inside the tenant; its auditors read this.',
      validate: z
        .string()
        .trim()
        .min(REASON_MIN_CHARS, `must be at least ${REASON_MIN_CHARS} characters`)
        .max(REASON_MAX_CHARS, `must be at most ${REASON_MAX_CHARS} characters`),
    }),
    durationMinutes: t.int({
      defaultValue: DEFAULT_DURATION_MINUTES,
      validate: z
        .number()
        .int()
        .min(MIN_DURATION_MINUTES, `must be at least ${MIN_DURATION_MINUTES} minute`)
        .max(MAX_DURATION_MINUTES, `must be at most ${MAX_DURATION_MINUTES} minutes`),
    }),
  }),
});

builder.mutationFields((t) => ({
  openBreakGlass: t.field({
    type: BreakGlassGrantRef,
    description:
      "Platform admins: open a time-limited grant to look inside one tenant. Audited in the tenant's log (breakglass.open) with the reason.",
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: OpenBreakGlassInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      openBreakGlass(ctx, {
        tenantId: decodeId(String(input.tenantId), 'Tenant'),
        reason: input.reason,
        durationMinutes: input.durationMinutes ?? DEFAULT_DURATION_MINUTES,
      }),
  }),
  closeBreakGlass: t.field({
    type: BreakGlassGrantRef,
    description:
      "End a grant at once: its operator, any platform admin, or the tenant's admins. CONFLICT if it already ended.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => closeBreakGlass(ctx, decodeId(String(id), 'BreakGlassGrant')),
  }),
}));
