export { createAdapter } from './server.js';
export type { Adapter, AdapterOptions } from './server.js';
export { loadAdapterConfig, PACKAGE_NAME } from './config.js';
export type { AdapterConfig } from './config.js';
export { AdapterError } from './errors.js';
export type { AdapterErrorCode } from './errors.js';
