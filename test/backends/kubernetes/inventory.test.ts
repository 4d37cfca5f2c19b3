// inventoryOf: Kubernetes Nodes → the scheduler's node model; parseQuantity and the unit helpers.

import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { Node } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { inventoryOf } from '../../../src/backends/kubernetes/inventory.js';
import {
  cpuMillicores,
  memoryMiB,
  parseQuantity,
  resourceCount,
} from '../../../src/backends/kubernetes/quantity.js';
import { parseKubernetesSettings } from '../../../src/backends/kubernetes/settings.js';

const A100 = 'NVIDIA-A100-SXM4-80GB';
const settings = parseKubernetesSettings({
  flavors: [
    { flavor: 'a100-1g', resource: 'nvidia.com/mig-1g.10gb', unitsPerGpu: 7 },
    { flavor: 'a100', resource: 'nvidia.com/gpu', gpuProduct: A100 },
    { flavor: 'h100-infer', resource: 'nvidia.com/gpu', gpuProduct: 'NVIDIA-H100-80GB-HBM3', pool: 'infer' },
    { flavor: 't4-shared', resource: 'nvidia.com/gpu.shared', unitsPerGpu: 4 },
  ],
});

function node(
  name: string,
  o: {
    labels?: Record<string, string>;
    allocatable: Record<string, string>;
    taints?: V1Taint[];
    unschedulable?: boolean;
    ready?: string;
  },
): V1Node {
  const n: V1Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...o.labels } },
    spec: { ...(o.taints ? { taints: o.taints } : {}), ...(o.unschedulable ? { unschedulable: true } : {}) },
    status: {
      allocatable: o.allocatable,
      capacity: o.allocatable,
      conditions: [{ type: 'Ready', status: o.ready ?? 'True' }],
    },
  };
  new Node(n as never).validate(); // fixtures are real Node objects
  return n;
}

const cpuMem = { cpu: '63500m', memory: '515898Mi' };

describe('inventoryOf', () => {
  it('whole GPUs by product label; pools from the label, default "default"; cpu and memory parsed', () => {
    const { nodes, ignored } = inventoryOf(
      [
        node('a1', {
          labels: { 'nvidia.com/gpu.product': A100, 'fairway.dev/pool': 'train' },
          allocatable: { ...cpuMem, 'nvidia.com/gpu': '8' },
        }),
        node('a2', {
          labels: { 'nvidia.com/gpu.product': A100 },
          allocatable: { cpu: '96', memory: '1056766972Ki', 'nvidia.com/gpu': '4' },
        }),
      ],
      settings,
    );
    expect(ignored).toEqual([]);
    expect(nodes).toEqual([
      {
        name: 'a1',
        pool: 'train',
        flavor: 'a100',
        gpus: 8,
        cpu: 63500,
        memory: 515898,
        unschedulable: false,
        dedicatedTenant: null,
        gpuProduct: A100,
      },
      {
        name: 'a2',
        pool: 'default',
        flavor: 'a100',
        gpus: 4,
        cpu: 96000,
        memory: 1031998,
        unschedulable: false,
        dedicatedTenant: null,
        gpuProduct: A100,
      },
    ]);
  });

  it('MIG resources count physical GPUs by unitsPerGpu; a time-sliced resource likewise; the first matching mapping wins', () => {
    const { nodes } = inventoryOf(
      [
        // A mixed-strategy MIG node also shows nvidia.com/gpu: the MIG mapping comes first in the settings.
        node('mig', {
          labels: { 'nvidia.com/gpu.product': A100 },
          allocatable: { ...cpuMem, 'nvidia.com/mig-1g.10gb': '28', 'nvidia.com/gpu': '0' },
        }),
        node('ts', {
          labels: { 'nvidia.com/gpu.product': 'Tesla-T4' },
          allocatable: { ...cpuMem, 'nvidia.com/gpu.shared': '9' },
        }),
      ],
      settings,
    );
    expect(nodes.map((n) => [n.name, n.flavor, n.gpus])).toEqual([
      ['mig', 'a100-1g', 4],
      ['ts', 't4-shared', 2], // 9 shares = 2 whole GPUs of 4 shares
    ]);
  });

  it('a mapping with a pool only takes nodes of that pool', () => {
    const h100 = { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' };
    const { nodes, ignored } = inventoryOf(
      [
        node('h-infer', {
          labels: { ...h100, 'fairway.dev/pool': 'infer' },
          allocatable: { ...cpuMem, 'nvidia.com/gpu': '8' },
        }),
        node('h-train', {
          labels: { ...h100, 'fairway.dev/pool': 'train' },
          allocatable: { ...cpuMem, 'nvidia.com/gpu': '8' },
        }),
      ],
      settings,
    );
    expect(nodes.map((n) => [n.name, n.flavor, n.pool])).toEqual([['h-infer', 'h100-infer', 'infer']]);
    expect(ignored).toEqual([
      {
        name: 'h-train',
        why: 'no flavor mapping matches nvidia.com/gpu=8 with GPU product NVIDIA-H100-80GB-HBM3 in pool train',
      },
    ]);
  });

  it('cordoned, NotReady and NoSchedule/NoExecute-tainted nodes are unschedulable; the GPU and dedicated taints are not', () => {
    const gpu = {
      labels: { 'nvidia.com/gpu.product': A100 },
      allocatable: { ...cpuMem, 'nvidia.com/gpu': '8' },
    };
    const { nodes } = inventoryOf(
      [
        node('ok', {
          ...gpu,
          taints: [
            { key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' },
            { key: 'spot', effect: 'PreferNoSchedule' },
          ],
        }),
        node('cordoned', {
          ...gpu,
          unschedulable: true,
          taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }],
        }),
        node('not-ready', { ...gpu, ready: 'Unknown' }),
        node('maintenance', { ...gpu, taints: [{ key: 'maintenance', value: 'true', effect: 'NoExecute' }] }),
        node('dedicated', {
          ...gpu,
          taints: [{ key: 'fairway.dev/dedicated', value: 'tenant-7', effect: 'NoSchedule' }],
        }),
      ],
      settings,
    );
    expect(nodes.map((n) => [n.name, n.unschedulable, n.dedicatedTenant])).toEqual([
      ['ok', false, null],
      ['cordoned', true, null],
      ['not-ready', true, null],
      ['maintenance', true, null],
      ['dedicated', false, 'tenant-7'],
    ]);
  });

  it('nodes no mapping matches are ignored with why, CPU-only nodes included; an unreadable quantity too', () => {
    const { nodes, ignored } = inventoryOf(
      [
        node('cpu-only', { allocatable: cpuMem }),
        node('v100', {
          labels: { 'nvidia.com/gpu.product': 'Tesla-V100' },
          allocatable: { ...cpuMem, 'nvidia.com/gpu': '8' },
        }),
        {
          ...node('broken', {
            labels: { 'nvidia.com/gpu.product': A100 },
            allocatable: { cpu: '8', memory: '1Gi', 'nvidia.com/gpu': '8' },
          }),
          status: {
            allocatable: { cpu: 'lots', 'nvidia.com/gpu': '8' },
            conditions: [{ type: 'Ready', status: 'True' }],
          },
        },
      ],
      settings,
    );
    expect(nodes).toEqual([]);
    expect(ignored).toEqual([
      {
        name: 'cpu-only',
        why: expect.stringMatching(/^no GPU resource any flavor mapping names \(a CPU-only node\?\)/),
      },
      {
        name: 'v100',
        why: 'no flavor mapping matches nvidia.com/gpu=8 with GPU product Tesla-V100 in pool default',
      },
      { name: 'broken', why: 'unreadable capacity: Not a Kubernetes quantity: "lots"' },
    ]);
  });
});

describe('quantities', () => {
  it('parses the Kubernetes quantity forms', () => {
    expect(parseQuantity('500m')).toBe(0.5);
    expect(parseQuantity('2')).toBe(2);
    expect(parseQuantity('16Gi')).toBe(16 * 2 ** 30);
    expect(parseQuantity('1000Mi')).toBe(1000 * 2 ** 20);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity('128974848')).toBe(128974848);
    expect(parseQuantity('1.5Gi')).toBe(1.5 * 2 ** 30);
    expect(parseQuantity('2.5k')).toBe(2500);
    expect(parseQuantity('100M')).toBe(1e8);
    expect(parseQuantity(3)).toBe(3);
    for (const bad of ['', 'lots', '1Gb', '1.2.3', 'Gi', '1 Gi'])
      expect(() => parseQuantity(bad)).toThrow(/Not a Kubernetes quantity/);
  });

  it('converts to Fairway units: millicores, MiB, whole counts', () => {
    expect(cpuMillicores('500m')).toBe(500);
    expect(cpuMillicores('2')).toBe(2000);
    expect(cpuMillicores('0.1')).toBe(100);
    expect(cpuMillicores('100u')).toBe(1); // Kubernetes rounds sub-milli cpu up
    expect(memoryMiB('16Gi')).toBe(16384);
    expect(memoryMiB('1000Mi')).toBe(1000);
    expect(memoryMiB('128974848')).toBe(123);
    expect(memoryMiB('1G')).toBe(953);
    expect(resourceCount('7')).toBe(7);
    expect(resourceCount('1e1')).toBe(10);
  });
});
