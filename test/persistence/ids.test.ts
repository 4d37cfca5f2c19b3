import { describe, expect, it } from 'vitest';
import { isUuid, uuidv7 } from '../../src/persistence/ids.js';

describe('uuidv7', () => {
  it('is a version-7 UUID', () => {
    const id = uuidv7();
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
  });

  it('sorts in creation order within one millisecond and when the clock steps back', () => {
    const at = Date.now() + 10_000;
    const ids = [
      ...Array.from({ length: 5000 }, () => uuidv7(at)),
      ...Array.from({ length: 10 }, () => uuidv7(at - 5)),
    ];
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('carries its millisecond timestamp in the first 48 bits and random bits after the counter', () => {
    const at = Date.UTC(2031, 4, 6, 7, 8, 9, 123);
    const ids = Array.from({ length: 2000 }, () => uuidv7(at + 1_000_000));
    expect(parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16)).toBe(at + 1_000_000);
    // The 62 random bits differ between ids (drawn from a pool that refills itself).
    expect(new Set(ids.map((id) => id.slice(19))).size).toBe(ids.length);
  });
});
