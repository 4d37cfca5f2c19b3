import { randomFillSync, randomInt } from 'node:crypto';

let lastMs = 0;
let sequence = 0;

/**
 * UUIDv7 (RFC 9562): a millisecond timestamp in the high bits, so ids sort by creation
 * time. Lists page by id (keyset cursors) and come out in creation order, and the outbox is
 * performed in id order. Within one millisecond a 12-bit counter (RFC 9562, method 1) keeps
 * this process's ids strictly increasing; a clock that steps back does not break the order.
 */
export function uuidv7(now: number = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    sequence = randomInt(0, 0x400); // start low so the counter has room
  } else if (++sequence > 0xfff) {
    lastMs += 1;
    sequence = 0;
  }
  const bytes = Buffer.allocUnsafe(16);
  // 48-bit millisecond timestamp, big-endian (no BigInt: this runs once per job and event).
  bytes.writeUIntBE(lastMs, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8); // version 7 + counter high bits
  bytes[7] = sequence & 0xff;
  randomTail(bytes);
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// Random bits are drawn from the CSPRNG a pool at a time: one randomBytes call per id was ~5%
// of a 1,000-job batch submit's CPU (two ids per job).
const POOL_BYTES = 8192;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

/** Fills bytes 8..15 with fresh random bytes. */
function randomTail(bytes: Buffer): void {
  if (poolOffset + 8 > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  pool.copy(bytes, 8, poolOffset, poolOffset + 8);
  poolOffset += 8;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
