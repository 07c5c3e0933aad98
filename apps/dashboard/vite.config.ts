import { defineConfig } from 'vite';

// No React plugin needed: Vite's own transform (oxc) compiles the JSX. The
// gateway serves dist/ at its root, with index.html for every dashboard path.
export default defineConfig({
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  server: {
    // `pnpm --filter @farebox/dashboard dev` against a gateway on :8787.
    proxy: Object.fromEntries(['/v1', '/auth', '/health', '/devnet'].map((p) => [p, 'http://127.0.0.1:8787'])),
  },
});
