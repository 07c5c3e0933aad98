import type { UserWorkspaceConfig } from 'vitest/config';

/**
 * The shared conditions list carries 'import' and 'module'; vitest hands the
 * list to Node's loader, so pg's CommonJS `require('pg-pool')` would load
 * pg-pool's ESM build (require(esm) on Node 20.19+) and fail with "Class
 * extends value [object Module]". Keep only the source condition; Node adds
 * import/require itself.
 */
export function withNodeConditions(project: UserWorkspaceConfig): UserWorkspaceConfig {
  const conditions = ['@farebox/source', 'node', 'default'];
  return {
    ...project,
    resolve: { ...project.resolve, conditions },
    ssr: { ...project.ssr, resolve: { ...project.ssr?.resolve, conditions } },
  };
}
