import { builder } from '../builder.js';

interface PlacementLine {
  podSet: string;
  flavor: string;
  node: string;
  pods: number;
  gpuIndices: number[];
}

/** Where an admission (a job's, or a preview's) puts pods: one line per pod set and node. */
export const PlacementRef = builder.objectRef<PlacementLine>('Placement').implement({
  fields: (t) => ({
    podSet: t.exposeString('podSet'),
    flavor: t.exposeString('flavor'),
    node: t.exposeString('node'),
    pods: t.exposeInt('pods'),
    gpuIndices: t.exposeIntList('gpuIndices', {
      description: 'GPU (or slice) indices on the node, in pod order.',
    }),
  }),
});

type AdmittedPodSets = {
  podSets: readonly {
    name: string;
    flavor: string;
    placements: readonly { node: string; pods: number; gpuIndices?: number[] }[];
  }[];
};

/** The placement lines of an admission; none before admission. */
export function placementLines(admission: AdmittedPodSets | null | undefined): PlacementLine[] {
  return (admission?.podSets ?? []).flatMap((ps) =>
    ps.placements.map((p) => ({
      podSet: ps.name,
      flavor: ps.flavor,
      node: p.node,
      pods: p.pods,
      gpuIndices: p.gpuIndices ?? [],
    })),
  );
}
