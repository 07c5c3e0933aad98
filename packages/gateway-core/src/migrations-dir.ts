import { fileURLToPath } from 'node:url';

/** The gateway's SQL migrations. (This file sits directly in src/ so the path holds in the built bundle too.) */
export const GATEWAY_MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));
