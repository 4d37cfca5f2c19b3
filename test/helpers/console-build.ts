import { ensureBuilt } from '../../web/ensure-built.mjs';

/**
 * vitest global setup: the console is built once, before any file runs (the browser tests then find
 * it fresh), so two files running at once never rebuild web/dist under each other.
 */
export default function buildConsole(): void {
  ensureBuilt();
}
