import { z } from 'zod';
import {
  type DataBoundaries,
  effectiveBoundaries,
  setProjectDataBoundaries,
  setTenantDataBoundaries,
} from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { ProjectRef, TenantRef } from '../refs.js';

const DataBoundariesRef = builder.objectRef<DataBoundaries>('DataBoundaries').implement({
  description:
    'Where jobs may take images from, read datasets from and write models to. Entries are prefixes matched at a path boundary (registry.example.com/team, s3://bucket/prefix). A null list is not restricted; an empty list allows nothing.',
  fields: (t) => ({
    imageRegistries: t.stringList({ nullable: true, resolve: (b) => b.imageRegistries ?? null }),
    datasetLocations: t.stringList({ nullable: true, resolve: (b) => b.datasetLocations ?? null }),
    artifactStores: t.stringList({ nullable: true, resolve: (b) => b.artifactStores ?? null }),
  }),
});

const entryList = z
  .array(z.string().max(2048, 'each entry must be at most 2048 characters'))
  .max(64, 'at most 64 entries');

const DataBoundariesInput = builder.inputType('DataBoundariesInput', {
  description: 'Replaces all three lists; a list left out (or null) is not restricted, [] allows nothing.',
  fields: (t) => ({
    imageRegistries: t.stringList({
      description:
        'Registry hosts, optionally with a path: nvcr.io/nvidia, docker.io/library, registry.example.com.',
      validate: entryList,
    }),
    datasetLocations: t.stringList({
      description: 'URIs: s3://bucket/prefix, gs://bucket, pvc://claim/dir, nfs://server/export.',
      validate: entryList,
    }),
    artifactStores: t.stringList({ description: 'URIs, as dataset locations.', validate: entryList }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  dataBoundaries: t.field({
    type: DataBoundariesRef,
    nullable: true,
    description: "The platform's data boundaries for this tenant; null when none were set (unrestricted).",
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'tenant:read' } }),
    resolve: (tenant) => tenant.dataBoundaries ?? null,
  }),
}));

builder.objectFields(ProjectRef, (t) => ({
  dataBoundaries: t.field({
    type: DataBoundariesRef,
    nullable: true,
    description: "How the project's admins narrowed the tenant's boundaries; null when they did not.",
    authScopes: (project) => ({ capability: { tenantId: project.tenant.id, capability: 'tenant:read' } }),
    resolve: (project) => project.dataBoundaries ?? null,
  }),
  effectiveDataBoundaries: t.field({
    type: DataBoundariesRef,
    description:
      "What the project's jobs may actually use: the tenant's boundaries narrowed by the project's.",
    authScopes: (project) => ({ capability: { tenantId: project.tenant.id, capability: 'tenant:read' } }),
    resolve: async (project, _args, ctx) =>
      effectiveBoundaries(
        (await ctx.loaders.tenant.load(project.tenant.id))?.dataBoundaries ?? null,
        project.dataBoundaries ?? null,
      ),
  }),
}));

const boundariesOf = (input: typeof DataBoundariesInput.$inferInput) => ({
  imageRegistries: input.imageRegistries ?? null,
  datasetLocations: input.datasetLocations ?? null,
  artifactStores: input.artifactStores ?? null,
});

builder.mutationFields((t) => ({
  setTenantDataBoundaries: t.field({
    type: TenantRef,
    description: 'Platform admins.',
    authScopes: { authenticated: true },
    args: {
      tenantId: t.arg.id({ required: true }),
      boundaries: t.arg({ type: DataBoundariesInput, required: true }),
    },
    resolve: (_r, args, ctx) =>
      setTenantDataBoundaries(ctx, decodeId(String(args.tenantId), 'Tenant'), boundariesOf(args.boundaries)),
  }),
  setProjectDataBoundaries: t.field({
    type: ProjectRef,
    description: "The project's admins (and tenant admins). Every entry must lie within the tenant's list.",
    authScopes: { authenticated: true },
    args: {
      projectId: t.arg.id({ required: true }),
      boundaries: t.arg({ type: DataBoundariesInput, required: true }),
    },
    resolve: (_r, args, ctx) =>
      setProjectDataBoundaries(
        ctx,
        decodeId(String(args.projectId), 'Project'),
        boundariesOf(args.boundaries),
      ),
  }),
}));
