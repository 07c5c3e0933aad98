/**
 * Writes the OpenAPI document generated from `@farebox/contract` to
 * `docs/openapi.json` (run `pnpm --filter @farebox/gateway openapi` after
 * changing the contract; a test fails while the copy is stale).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '@farebox/gateway-http';

const target = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));
writeFileSync(target, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
console.log(`wrote ${target}`);
