// Internal units and resource vectors: GPU amounts are integer milli-units (a whole GPU, a slice and a
// share are each 1000), cpu millicores, memory MiB; vectors are [gpu, cpu, memory].
import { GPU, RESOURCE_COUNT } from './quota.js';
import type { ResourceName } from './types.js';

export const RES: readonly ResourceName[] = ['gpu', 'cpu', 'memory'];

export function toInternal(r: number, v: number): number {
  return r === GPU ? Math.round(v * 1000) : Math.round(v);
}

export function toApi(r: number, v: number): number {
  return r === GPU ? v / 1000 : v;
}

export function addVec(m: Map<string, number[]>, f: string, v: readonly number[], times: number): void {
  let cur = m.get(f);
  if (!cur) {
    cur = [0, 0, 0];
    m.set(f, cur);
  }
  for (let r = 0; r < RESOURCE_COUNT; r++) cur[r] = (cur[r] as number) + (v[r] as number) * times;
}

export function mapToObj<V>(m: Map<string, V>): Record<string, V> {
  const o: Record<string, V> = {};
  for (const [k, v] of [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1))) o[k] = v;
  return o;
}

export function structuredCloneSpec<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

export function gpuOf(usage: Map<string, number[]>): number {
  let g = 0;
  for (const v of usage.values()) g += v[GPU] as number;
  return g;
}
