// Kubernetes resource quantities ('500m', '2', '16Gi', '1000Mi', '1e3', '128974848') to numbers in
// Fairway's units. @kubernetes/client-node 1.4.0 has `quantityToScalar` in dist/util.js, but it is
// not exported from the package root, returns a bigint for suffixed values and throws on decimal
// mantissas with a suffix ('1.5Gi', '2.5k'), which nodes do report; so a small parser lives here.

const SUFFIX_FACTOR: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

// Kubernetes' grammar: a signed decimal, then a binary SI suffix, a decimal SI suffix or a decimal exponent.
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

/** The quantity in base units (cores for cpu, bytes for memory, a count for extended resources). Throws on a
 * malformed quantity.
 */
export function parseQuantity(quantity: string | number): number {
  if (typeof quantity === 'number') {
    if (!Number.isFinite(quantity)) throw new Error(`Not a Kubernetes quantity: ${quantity}`);
    return quantity;
  }
  const m = QUANTITY.exec(quantity.trim());
  if (!m) throw new Error(`Not a Kubernetes quantity: "${quantity}"`);
  const mantissa = Number(m[1]);
  if (m[2]) return Number(`${m[1]}${m[2]}`);
  return mantissa * (SUFFIX_FACTOR[m[3] ?? ''] as number);
}

/** CPU quantity → millicores (Kubernetes rounds sub-milli amounts up). */
export function cpuMillicores(quantity: string | number): number {
  return Math.ceil(roundAway(parseQuantity(quantity) * 1000));
}

/** Memory quantity → whole MiB (rounded down: a pod cannot use a partial MiB the node lacks). */
export function memoryMiB(quantity: string | number): number {
  return Math.floor(roundAway(parseQuantity(quantity) / 2 ** 20));
}

/** Extended resource quantity (nvidia.com/gpu, MIG profiles…) → whole units. */
export function resourceCount(quantity: string | number): number {
  return Math.floor(roundAway(parseQuantity(quantity)));
}

// 0.1 * 1000 is 100.00000000000001 in floating point: snap values within 1e-9 of an integer to it.
function roundAway(v: number): number {
  const r = Math.round(v);
  return Math.abs(v - r) < 1e-9 ? r : v;
}
