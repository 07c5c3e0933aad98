export { createEscrowClient } from './client.js';
export type { EscrowClient, EscrowClientOptions, Escrow, EscrowRoles, DeployInput, SendResult } from './client.js';
export { EscrowError } from './errors.js';
export type { EscrowErrorCode } from './errors.js';
