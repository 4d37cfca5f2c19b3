import { describe, expect, it } from 'vitest';
import { type PodShape, shapeKey } from '../../src/simulator/fragmentation.js';
import { PendingShapes } from '../../src/simulator/pending-shapes.js';

const one: PodShape = { gpu: 1, cpu: 0, memory: 0 };
const four: PodShape = { gpu: 4, cpu: 8000, memory: 0, flavors: ['h100'] };

describe('PendingShapes: a multiset of pending pod shapes', () => {
  it('counts each shape and lists the distinct ones', () => {
    const p = new PendingShapes();
    p.add(one);
    p.add(one);
    p.add(four, shapeKey(four));
    expect(p.size).toBe(2);
    expect(p.count(shapeKey(one))).toBe(2);
    expect(p.count(shapeKey(four))).toBe(1);
    expect(p.shapes()).toEqual([one, four]);
  });

  it('drops a shape when its last job leaves; removing an absent shape does nothing', () => {
    const p = new PendingShapes();
    p.add(one);
    p.add(one);
    p.remove(shapeKey(one));
    expect(p.count(shapeKey(one))).toBe(1);
    p.remove(shapeKey(one));
    expect(p.size).toBe(0);
    expect(p.count(shapeKey(one))).toBe(0);
    p.remove(shapeKey(one));
    p.remove(shapeKey(four));
    expect(p.size).toBe(0);
    expect(p.shapes()).toEqual([]);
  });

  it('bumps its version only when the set of distinct shapes changes', () => {
    const p = new PendingShapes();
    const v0 = p.version;
    p.add(one);
    const v1 = p.version;
    expect(v1).not.toBe(v0);
    p.add(one);
    p.remove(shapeKey(one));
    p.remove(shapeKey(four)); // absent
    expect(p.version).toBe(v1);
    p.remove(shapeKey(one));
    expect(p.version).not.toBe(v1);
  });

  it('lists shapes in the order they last became pending', () => {
    const p = new PendingShapes();
    p.add(one);
    p.add(four);
    p.remove(shapeKey(one));
    p.add(one);
    expect(p.shapes()).toEqual([four, one]);
  });
});
