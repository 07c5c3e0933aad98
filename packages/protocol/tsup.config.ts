import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'node/files': 'src/node/files.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
});
