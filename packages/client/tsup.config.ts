import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'oauth/index': 'src/oauth/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
});
