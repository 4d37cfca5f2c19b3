// The node and pod shapes placement works on (internal units: GPU amounts in milli-units), apart
// from nodes.ts so that frag-score.ts, which nodes.ts calls, can use them without importing it.
import type { FlavorSpec, NodeSpec } from './types.js';

export interface FlavorState {
  spec: FlavorSpec;
  /** Milli-units one physical GPU holds. */
  perGpuMilli: number;
  /** Sorted by name: placement scans are deterministic. */
  nodes: NodeState[];
  /** Nodes with some free GPU: GPU pods only scan these (a full cluster has few). */
  withFreeGpu: Set<NodeState>;
  /** Aggregate free capacity over the flavor's nodes, for a quick reject before any scan. */
  freeGpu: number;
  freeCpu: number;
  freeMem: number;
}

export interface NodeState {
  spec: NodeSpec;
  flavor: FlavorState;
  gpuFree: number[];
  freeGpuTotal: number;
  cpuFree: number;
  memFree: number;
  /** Pods currently placed here. */
  pods: number;
  /** Bumped by every claim and release: keys the cached state key (frag-score.ts). */
  ver: number;
  /** stateKey() at version keyVer. */
  key: string;
  keyVer: number;
}

/** One pod's claim on a node. gpus[i] is a GPU index and gpuMilli[i] what it takes from it. */
export interface PodAlloc {
  node: NodeState;
  cpu: number;
  mem: number;
  gpus: number[];
  gpuMilli: number[];
}

/** A pod shape in internal units. */
export interface Shape {
  gpu: number;
  cpu: number;
  mem: number;
}

/** A pod shape with its weight (share of the expected or pending pods) for the fragmentation score. */
export interface WeightedShape extends Shape {
  weight: number;
}
