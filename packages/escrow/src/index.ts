export { createEscrowClient } from './client.js';
export type { EscrowClient, EscrowClientOptions, Escrow, EscrowRoles, DeployInput, SendResult } from './client.js';
export type { EscrowClock } from './budget.js';
export { EscrowError, EscrowPaymentError } from './errors.js';
export type { EscrowErrorCode, EscrowPaymentErrorCode, EscrowPaymentErrorData } from './errors.js';
export { createEscrowPayer, createServiceRequester, DIRECT_CALL_STEPS } from './payer.js';
export type {
  ServiceAnswer,
  EscrowPayer,
  EscrowPayerOptions,
  PayTarget,
  PayOptions,
  DirectCallResult,
  DirectCallStep,
  ProgressEvent,
  TraceStep,
} from './payer.js';
