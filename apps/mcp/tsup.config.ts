import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/main.ts'],
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  sourcemap: true,
  clean: true,
  // The adapter runs on Node 18 (spec): no syntax or APIs newer than that.
  target: 'node18',
});
