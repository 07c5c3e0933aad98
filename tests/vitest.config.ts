import { defineConfig } from 'vitest/config';

// Checks over the whole tree: what the docs promise about the code.
export default defineConfig({
  test: {
    name: 'repo',
    include: ['*.test.ts'],
  },
});
