// The console's build: Preact through Vite's own JSX transform (no Babel), every asset under /assets
// with a content hash, nothing loaded from another origin.
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // The CSP allows no inline script: the module preload polyfill would be one.
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
  },
});
