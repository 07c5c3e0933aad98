import type { StellarErrorCode } from './errors.js';

/**
 * The registry contract's error numbers (`Error(Contract, #n)`) as the devnet's
 * registry raises them, with the error code and message the client reports.
 */
export const REGISTRY_ERRORS: Readonly<Record<number, { name: string; code: StellarErrorCode; message: string }>> = {
  1: { name: 'AlreadyRegistered', code: 'ALREADY_EXISTS', message: 'service name is already registered' },
  2: { name: 'NotFound', code: 'NOT_FOUND', message: 'service is not registered' },
  3: { name: 'InvalidService', code: 'INVALID_INPUT', message: 'service name must be 1 to 32 characters' },
  4: { name: 'EndpointTooLong', code: 'INVALID_INPUT', message: 'endpoint must be at most 256 characters' },
  5: { name: 'DescriptionTooLong', code: 'INVALID_INPUT', message: 'description must be at most 512 characters' },
  6: { name: 'InvalidPrice', code: 'INVALID_INPUT', message: 'price per call must be greater than 0' },
};

/** Registry limits, as the contract enforces them. */
export const REGISTRY_LIMITS = { serviceMax: 32, endpointMax: 256, descriptionMax: 512 } as const;
