import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS (index.js) and ESM (index.mjs). Node loads the CJS build for
    // the libraries in node_modules; Vite would give our test files the ESM one, and two
    // graphql instances refuse each other's types. One build for everyone.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Under CI=true: PostgreSQL, Redis and chromium must be there, or the run fails; the console is built once.
    globalSetup: ['test/helpers/ci-services.ts', 'test/helpers/console-build.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One module graph per worker, shared by the files it runs: importing the app (ORM, graphql,
    // Pothos) anew for each of 160 files cost more than half the run. Test files keep their own
    // state (each builds its app and closes it), so none leans on a fresh registry.
    isolate: false,
    // Two files at a time on CI's two cores: most suites wait on servers, sockets and the
    // database rather than compute, and one at a time took the run past CI's 15 minutes.
    maxWorkers: 2,
  },
});
