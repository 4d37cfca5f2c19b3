import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cutLine,
  decodeUtf8,
  keepLast,
  lineBytes,
  MAX_LINE_BYTES,
  maskSecrets,
  SECRET_MASK,
  scrubClusterText,
  selectLines,
} from '../../../src/core/logs/index.js';

const utf8 = (s: string) => new TextEncoder().encode(s).length;

describe('log lines', () => {
  it('a line within 16 KiB is kept as it is; a longer one is cut on a character boundary with the count', () => {
    expect(cutLine('hello')).toBe('hello');
    const big = 'é'.repeat(10_000); // 20,000 bytes
    const cut = cutLine(big);
    expect(cut).toMatch(/ …\[line cut: \d+ more bytes\]$/);
    const kept = cut.slice(0, cut.indexOf(' …['));
    expect(utf8(kept)).toBeLessThanOrEqual(MAX_LINE_BYTES);
    expect(kept).toBe('é'.repeat(kept.length));
    expect(Number(/cut: (\d+)/.exec(cut)![1]) + utf8(kept)).toBe(20_000);
    // 10 MB in one line: cut, fast, bounded.
    expect(utf8(cutLine('x'.repeat(10_000_000)))).toBeLessThan(MAX_LINE_BYTES + 64);
  });

  it('bytes that are not UTF-8 and lone surrogates become U+FFFD, never an error', () => {
    expect(decodeUtf8(new Uint8Array([0x6f, 0x6b, 0xff, 0xfe, 0x21]))).toBe('ok\uFFFD\uFFFD!');
    expect(cutLine('a\uD800b')).toBe('a\uFFFDb');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const text = cutLine(decodeUtf8(bytes), 64);
        expect(() => new TextEncoder().encode(text)).not.toThrow();
        expect(text.includes('\uD800')).toBe(false);
      }),
    );
  });

  it('masks every occurrence of every secret, the longest first; a secret never survives', () => {
    expect(maskSecrets('token=abc123 and abc123!', ['abc123'])).toBe(
      `token=${SECRET_MASK} and ${SECRET_MASK}!`,
    );
    expect(maskSecrets('key=supersecret', ['super', 'supersecret'])).toBe(`key=${SECRET_MASK}`);
    expect(maskSecrets('nothing', [''])).toBe('nothing');
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 8 }),
        fc.string({ maxLength: 40 }),
        (secret, around) => {
          const masked = maskSecrets(`${around}${secret}${around}`, [secret]);
          expect(masked.includes(secret) && !SECRET_MASK.includes(secret)).toBe(false);
        },
      ),
    );
  });

  it('selects by since, contains and the last N, in order', () => {
    const lines = [0, 1, 2, 3, 4].map((i) => ({ at: i * 10, text: i % 2 ? `odd ${i}` : `even ${i}` }));
    expect(selectLines(lines, { since: 20 }).map((l) => l.at)).toEqual([20, 30, 40]);
    expect(selectLines(lines, { contains: 'odd' }).map((l) => l.at)).toEqual([10, 30]);
    expect(selectLines(lines, { tail: 2, contains: 'even' }).map((l) => l.at)).toEqual([20, 40]);
    expect(selectLines(lines, { tail: 0 })).toEqual([]);
  });

  it('keeps the last lines within the archive size and says whether any were left out', () => {
    const lines = Array.from({ length: 100 }, (_, i) => ({ text: `line ${String(i).padStart(3, '0')}` }));
    const all = keepLast(lines, 10_000);
    expect(all).toEqual({ lines, truncated: false });
    const some = keepLast(lines, 95);
    expect(some.truncated).toBe(true);
    expect(some.lines.at(-1)).toBe(lines.at(-1));
    expect(some.lines.reduce((n, l) => n + lineBytes(l), 0)).toBeLessThanOrEqual(95);
    expect(some.lines.length).toBe(Math.floor(95 / 9));
    expect(lineBytes({ text: 'é' })).toBe(3);
  });
});

describe('cluster text', () => {
  it('drops taint values, other ids and other tenants’ names; keeps the job’s own', () => {
    const own = '0b9d6a2e-3f4c-4e1a-9b7d-2c5e8f1a6b3d';
    const other = '11111111-2222-4333-8444-555555555555';
    const text = `0/4 nodes are available: 2 node(s) had untolerated taint {fairway.dev/dedicated: ${other}}, pod fairway-borealis-inference/fw-x in borealis-inference; job ${own}, ${other}`;
    const scrubbed = scrubClusterText(text, {
      keepIds: [own],
      otherNames: ['borealis-inference', 'fairway-borealis-inference'],
    });
    expect(scrubbed).not.toContain(other);
    expect(scrubbed).not.toContain('borealis');
    expect(scrubbed).toContain(own);
    expect(scrubbed).toContain('{fairway.dev/dedicated}');
    expect(scrubbed).toContain('<another tenant>/fw-x');
  });
});
