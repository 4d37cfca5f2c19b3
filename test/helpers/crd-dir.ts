// Where the shared CRDs are (JobSet, PyTorchJob, Ray…, as their projects publish them): beside
// the repository (../shared/kubernetes/crds), or FAIRWAY_TEST_CRDS. A test that needs them fails
// when they are missing: they are part of the test bench, not optional.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const candidates = [
  process.env.FAIRWAY_TEST_CRDS,
  fileURLToPath(new URL('../../../shared/kubernetes/crds', import.meta.url)),
  '/work/shared/kubernetes/crds',
].filter((p): p is string => !!p);

export function crdDirectory(): string {
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found)
    throw new Error(
      `the shared CRDs are missing (looked in ${candidates.join(', ')}): put ../shared/kubernetes/crds beside the repository or set FAIRWAY_TEST_CRDS`,
    );
  return found;
}
