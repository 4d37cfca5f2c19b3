import { encodeGlobalID } from '@pothos/plugin-relay';
import {
  createService,
  deleteService,
  previewService,
  scaleService,
  updateService,
} from '../../src/services/inference/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { JobPreviewRef, previewView } from '../jobs/index.js';
import { InferenceServiceRef } from './inference-service.js';
import {
  CreateInferenceServiceInput,
  toCreateInput,
  toUpdateInput,
  UpdateInferenceServiceInput,
} from './inference-service-input.js';

type PreviewPart = Awaited<ReturnType<typeof previewView>>;

const ServicePreviewRef = builder
  .objectRef<{ replicas: number; guaranteed: PreviewPart | null; burst: PreviewPart | null }>(
    'ServicePreview',
  )
  .implement({
    description:
      'Would this many replicas fit now: the guaranteed part (within the nominal, never preempted) and the burst part (borrowing), each previewed as one ask beside what runs. Nothing is changed.',
    fields: (t) => ({
      replicas: t.exposeInt('replicas'),
      guaranteed: t.field({ type: JobPreviewRef, nullable: true, resolve: (p) => p.guaranteed }),
      burst: t.field({ type: JobPreviewRef, nullable: true, resolve: (p) => p.burst }),
      admissible: t.boolean({
        description: 'Both parts would be admitted in the next cycle.',
        resolve: (p) => (p.guaranteed?.admissible ?? true) && (p.burst?.admissible ?? true),
      }),
    }),
  });

const id = (raw: string | number) => decodeId(String(raw), 'InferenceService');

builder.mutationFields((t) => ({
  createInferenceService: t.field({
    type: InferenceServiceRef,
    description: 'Creates a service; its minimum replicas are submitted at once (one job each).',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: CreateInferenceServiceInput, required: true }) },
    resolve: (_r, { input }, ctx) => createService(ctx, toCreateInput(input)),
  }),
  updateInferenceService: t.field({
    type: InferenceServiceRef,
    authScopes: { authenticated: true },
    args: {
      id: t.arg.id({ required: true }),
      input: t.arg({ type: UpdateInferenceServiceInput, required: true }),
    },
    resolve: (_r, args, ctx) => updateService(ctx, id(args.id), toUpdateInput(args.input)),
  }),
  scaleInferenceService: t.field({
    type: InferenceServiceRef,
    description: 'Changes the bounds; the replicas move into them at once, then follow the signal.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), minReplicas: t.arg.int(), maxReplicas: t.arg.int() },
    resolve: (_r, args, ctx) =>
      scaleService(ctx, id(args.id), { minReplicas: args.minReplicas, maxReplicas: args.maxReplicas }),
  }),
  deleteInferenceService: t.id({
    description: 'Cancels the replicas (charged to now) and deletes the service; returns its id.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) =>
      encodeGlobalID('InferenceService', await deleteService(ctx, id(args.id))),
  }),
  previewService: t.field({
    type: ServicePreviewRef,
    authScopes: { authenticated: true },
    args: {
      input: t.arg({ type: CreateInferenceServiceInput, required: true }),
      replicas: t.arg.int({ required: true }),
    },
    resolve: async (_r, args, ctx) => {
      const preview = await previewService(ctx, toCreateInput(args.input), args.replicas);
      const view = async (part: typeof preview.guaranteed) =>
        part ? previewView(ctx, part.preview, part.queue, part.submit) : null;
      return {
        replicas: preview.replicas,
        guaranteed: await view(preview.guaranteed),
        burst: await view(preview.burst),
      };
    },
  }),
}));
