import { z } from 'zod';

// The body of `POST /x402/verify` and `POST /x402/settle` as `@x402/core`'s HTTPFacilitatorClient sends it
// (`{ x402Version, paymentPayload, paymentRequirements }`, x402 v2), parsed where it enters.

const Requirements = z
  .object({
    scheme: z.string().min(1).max(64),
    network: z.string().min(1).max(64),
    asset: z.string().min(1).max(128),
    amount: z.string().regex(/^[1-9]\d{0,18}$/, 'paymentRequirements.amount must be a positive integer of base units, as a string'),
    payTo: z.string().min(1).max(128),
    maxTimeoutSeconds: z.number().int().positive().max(86_400),
    extra: z.record(z.string(), z.unknown()).default({}),
  })
  .passthrough();

const Payload = z
  .object({
    x402Version: z.literal(2, { error: 'paymentPayload.x402Version must be 2 (exact on Stellar is x402 v2 only)' }),
    accepted: Requirements,
    payload: z.object({ transaction: z.string().min(1).max(65_536) }).passthrough(),
  })
  .passthrough();

const Body = z.object({
  x402Version: z.literal(2, { error: 'x402Version must be 2 (exact on Stellar is x402 v2 only)' }),
  paymentPayload: Payload,
  paymentRequirements: Requirements,
});

export type FacilitatorRequest = z.infer<typeof Body>;

/** The request, or `refuse(message)` thrown with the first problem (its path and what is wrong). */
export function parseFacilitatorRequest(body: unknown, refuse: (message: string) => Error): FacilitatorRequest {
  const r = Body.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const path = issue?.path.join('.') ?? '';
  const message = issue?.message ?? 'invalid request';
  if (path && /received undefined$/.test(message)) throw refuse(`${path} required`);
  throw refuse(message.includes(path) || !path ? message : `${path}: ${message}`);
}
