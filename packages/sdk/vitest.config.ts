import { packageProject } from '../../vitest.shared.js';

const project = packageProject('sdk');
// vitest hands ssr.resolve.conditions to Node as --conditions; the shared
// list's 'import' and 'module' then make require() load the ESM build of CJS
// dependencies (express's is-promise breaks). Keep only what Node should see.
project.ssr = { ...project.ssr, resolve: { ...project.ssr?.resolve, conditions: ['@farebox/source', 'node', 'development|production'] } };

export default project;
