import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'node/files': 'src/node/files.ts', 'node/signing-thread': 'src/node/signing-thread.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
});
