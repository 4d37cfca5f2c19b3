import { type ResolveCursorConnectionArgs, resolveCursorConnection } from '@pothos/plugin-relay';
import { getService, listServices } from '../../src/services/inference/index.js';
import { builder } from '../builder.js';
import { decodeId, pageFrom, toCursor } from '../common.js';
import { JobRef, TenantRef } from '../refs.js';
import { reloadingSubscription } from '../reloading-subscription.js';
import { InferenceServiceRef } from './inference-service.js';

builder.queryFields((t) => ({
  inferenceService: t.field({
    type: InferenceServiceRef,
    description: "Another tenant's service answers NOT_FOUND, like one that never existed.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => getService(ctx, decodeId(String(id), 'InferenceService')),
  }),
}));

builder.objectFields(TenantRef, (t) => ({
  inferenceServices: t.connection({
    type: InferenceServiceRef,
    description: 'Oldest first.',
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'jobs:read' } }),
    resolve: (tenant, args, ctx) =>
      resolveCursorConnection({ args, toCursor }, (page: ResolveCursorConnectionArgs) =>
        listServices(ctx, tenant.id, pageFrom(page)),
      ),
  }),
}));

builder.objectFields(JobRef, (t) => ({
  service: t.field({
    type: InferenceServiceRef,
    nullable: true,
    description: 'The inference service this job is a replica of; null for other jobs.',
    resolve: (j, _a, ctx) => (j.service ? getService(ctx, j.service.id) : null),
  }),
  replicaSlot: t.int({
    nullable: true,
    description: "The replica's slot (slots below the service's minimum are the guaranteed ones).",
    resolve: (j) => j.replicaSlot ?? null,
  }),
}));

builder.subscriptionFields((t) => ({
  serviceUpdated: t.field({
    type: InferenceServiceRef,
    description: 'The service each time its bounds, desired replicas or replicas change.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    ...reloadingSubscription({
      watch: ({ id }: { id: string | number }, ctx) =>
        getService(ctx, decodeId(String(id), 'InferenceService')),
      source: (service, ctx) => ctx.events.subscribe('service-updated', service.id),
      reload: ({ serviceId }, _args, ctx) => getService(ctx, serviceId),
    }),
  }),
}));
