import { z } from 'zod';
import { isValidStrKey } from './strkey.js';
import { SERVICE_NAME_PATTERN, serviceNameProblem } from './text.js';

/** Registry limits (the registry contract enforces the same). */
export const LIMITS = {
  serviceName: 32,
  endpoint: 256,
  description: 512,
  apiKeyName: 64,
  pricingNote: 256,
} as const;

/**
 * A service name under the one name policy ({@link serviceNameProblem}): lower-case ASCII
 * letters, digits and single hyphens, 1 to 32, starting and ending with a letter or digit.
 */
export const ServiceNameSchema = z
  .string({ error: 'service required' })
  .superRefine((v, ctx) => {
    const problem = serviceNameProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ minLength: 1, maxLength: LIMITS.serviceName, pattern: SERVICE_NAME_PATTERN.source } as Record<string, unknown>);

export const EndpointSchema = z.string().min(1, 'endpoint required').max(LIMITS.endpoint, `endpoint too long (max ${LIMITS.endpoint})`);

export const DescriptionSchema = z.string().max(LIMITS.description, `description too long (max ${LIMITS.description})`);

export const PublicKeySchema = z.string().refine((v) => isValidStrKey('publicKey', v), 'not a valid G... public key');
export const ContractIdSchema = z.string().refine((v) => isValidStrKey('contract', v), 'not a valid C... contract id');

/** A service's `/manifest` document. */
export const ManifestSchema = z.object({
  service: ServiceNameSchema,
  ownerWallet: PublicKeySchema,
  pricePerCall: z.number().positive(),
  priceBaseUnits: z.string().regex(/^\d+$/),
  pricingNote: z.string().optional(),
  description: z.string(),
  dynamicPricing: z.boolean(),
  payments: z.array(z.enum(['platform', 'escrow', 'exact'])),
  network: z.string(),
  platformPublicKey: z.string().optional(),
  contractId: z.string().optional(),
  endpoint: z.string().optional(),
  /** The x402 `bazaar` discovery extension (input and output schemas, an example), when the service declares one. */
  bazaar: z.record(z.string(), z.unknown()).optional(),
});
export type Manifest = z.infer<typeof ManifestSchema>;

/** Where a service's manifest is: `http://host/x/` -> `http://host/x/manifest` (the provider serves it next to its paid route). */
export function manifestUrl(endpoint: string): string {
  const url = new URL(endpoint);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/manifest`;
  url.search = '';
  url.hash = '';
  return url.toString();
}

/** Turns a zod error into the single `error` string the API returns. */
export function firstIssueMessage(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid input';
  return issue.message;
}
