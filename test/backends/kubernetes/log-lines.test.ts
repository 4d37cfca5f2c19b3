// Pod log lines as the backend parses them (log-lines.ts) and a run's pods as it names them
// (run-pods.ts), without a cluster: timestamps of any precision and offset, lines split anywhere
// (inside a character too), cursors of equal timestamps, and positions of retried and unindexed pods.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  comparePositions,
  LineParser,
  LineRing,
  MAX_LINE_BYTES,
  parseCursor,
  parseStamp,
  sinceTimeOf,
} from '../../../src/backends/kubernetes/log-lines.js';
import { runPods } from '../../../src/backends/kubernetes/run-pods.js';

describe('pod log lines', () => {
  it('reads RFC 3339 timestamps of any precision and offset as UTC with nine digits', () => {
    expect(parseStamp('2024-05-01T10:00:00.123456789Z')).toEqual({
      ts: '2024-05-01T10:00:00.123456789Z',
      at: Date.UTC(2024, 4, 1, 10, 0, 0, 123),
    });
    expect(parseStamp('2024-05-01T12:00:00.5+02:00')?.ts).toBe('2024-05-01T10:00:00.500000000Z');
    expect(parseStamp('2024-05-01T10:00:00Z')?.ts).toBe('2024-05-01T10:00:00.000000000Z');
    expect(parseStamp('yesterday')).toBeNull();
    expect(sinceTimeOf({ ts: '2024-05-01T10:00:00.999999999Z', n: 3 })).toBe('2024-05-01T10:00:00Z');
  });

  it('splits lines anywhere, decodes UTF-8 with replacement, and numbers lines of one timestamp', () => {
    const parser = new LineParser();
    const text = Buffer.from(
      '2024-05-01T10:00:00.000000001Z héllo\n2024-05-01T10:00:00.000000001Z again\n2024-05-01T10:00:00.000000002Z ',
    );
    const out = [];
    // One byte at a time: "é" is cut in two.
    for (const byte of text) out.push(...parser.push(Buffer.from([byte])));
    out.push(...parser.push(Buffer.from([0xff, 0x0a])));
    out.push(...parser.push(Buffer.from('2024-05-01T10:00:00.000000000Z late\nno newline at the end')));
    out.push(...parser.end());
    expect(out.map((l) => [l.text, l.cursor])).toEqual([
      ['héllo', '2024-05-01T10:00:00.000000001Z#000000000'],
      ['again', '2024-05-01T10:00:00.000000001Z#000000001'],
      ['\uFFFD', '2024-05-01T10:00:00.000000002Z#000000000'],
      // An earlier stamp after a later one keeps its place in the order.
      ['late', '2024-05-01T10:00:00.000000002Z#000000001'],
      ['no newline at the end', '2024-05-01T10:00:00.000000002Z#000000002'],
    ]);
    // Cursors sort as strings as they do as positions (the logs service compares them as strings).
    expect(out.map((l) => l.cursor)).toEqual(out.map((l) => l.cursor).sort());
    const positions = out.map((l) => parseCursor(l.cursor)!);
    for (let i = 1; i < positions.length; i++)
      expect(comparePositions(positions[i - 1]!, positions[i]!)).toBeLessThan(0);
    expect(parseCursor('not a cursor')).toBeNull();
  });

  it('keeps the start of a line longer than the limit, and the ring keeps the last bytes', () => {
    const parser = new LineParser();
    const [long] = parser.push(Buffer.from(`2024-05-01T10:00:00Z ${'x'.repeat(MAX_LINE_BYTES * 2)}\n`));
    expect(long!.text.length).toBe(MAX_LINE_BYTES - '2024-05-01T10:00:00Z '.length);
    const ring = new LineRing({ bytes: 10 });
    for (const text of ['aaaa', 'bbbb', 'cccc']) ring.push({ ...long!, text });
    expect(ring.lines().map((l) => l.text)).toEqual(['bbbb', 'cccc']);
    expect(ring.dropped).toBe(true);
  });
});

const pod = (name: string, labels: Record<string, string>, created: string, extra: object = {}): V1Pod =>
  ({
    metadata: {
      name,
      namespace: 'fairway-aurora',
      uid: name,
      labels: { 'fairway.dev/pod-set': 'workers', ...labels },
      annotations: { 'fairway.dev/admission-at': '1' },
      creationTimestamp: created,
      ...extra,
    },
    spec: { containers: [{ name: 'ray' }] },
  }) as unknown as V1Pod;

describe('a run’s pods', () => {
  const scope = { namespace: 'fairway-aurora', admissionAt: '1', podSets: [{ name: 'workers', count: 2 }] };

  it('gives pods no controller numbers the free indexes, oldest first; the newest at an index is current', () => {
    const found = runPods(
      [
        pod('w-c', {}, '2024-05-01T10:00:02Z'),
        pod('w-a', {}, '2024-05-01T10:00:00Z'),
        pod('w-b', {}, '2024-05-01T10:00:00Z'),
        pod('elsewhere', {}, '2024-05-01T10:00:00Z', { namespace: 'fairway-borealis' }),
        pod('old-run', {}, '2024-05-01T10:00:00Z', { annotations: { 'fairway.dev/admission-at': '0' } }),
      ],
      scope,
    );
    expect(found.map((p) => [p.pod.metadata!.name, p.position.index, p.current])).toEqual([
      ['w-a', 0, false],
      ['w-c', 0, true],
      ['w-b', 1, true],
    ]);
  });

  it('takes a controller’s index (a completion index, a Ray head) over the order', () => {
    const indexed = (name: string, index: string, created: string) =>
      pod(name, {}, created, {
        annotations: { 'fairway.dev/admission-at': '1', 'batch.kubernetes.io/job-completion-index': index },
      });
    const found = runPods(
      [
        indexed('j-1', '1', '2024-05-01T10:00:00Z'),
        indexed('j-0', '0', '2024-05-01T10:00:00Z'),
        indexed('j-0-retry', '0', '2024-05-01T10:00:05Z'),
      ],
      scope,
    );
    expect(found.map((p) => [p.pod.metadata!.name, p.position.index, p.current])).toEqual([
      ['j-0', 0, false],
      ['j-0-retry', 0, true],
      ['j-1', 1, true],
    ]);
  });
});
