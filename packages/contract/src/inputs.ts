import { z } from 'zod';
import { LIMITS, MIN_PRICE_BASE_UNITS, SERVICE_NAME_PATTERN, codePointLength, serviceNameProblem, textProblem } from '@farebox/protocol';

/**
 * Request parts: bodies, query strings, path parameters and headers. Messages
 * are the gateway's (the spec's where it names one): a refusal answers
 * `400 { error: <the first issue's message> }`.
 */

const unknownField = (iss: { code: string; keys?: string[] }) =>
  iss.code === 'unrecognized_keys' ? `unknown field: ${(iss.keys ?? []).join(', ')}` : undefined;

/**
 * An optional integer query parameter within [min, max] (absent or empty: the
 * default, or everything when `fallback` is a description such as `'all'`): decimal digits only, else
 * `invalid <name> (must be min <= n <= max)`. The value stays the string sent; the handler reads it with the same rule.
 */
export function intQuery(name: string, min: number, max: number, fallback: number | string) {
  const message = `invalid ${name} (must be ${min} <= n <= ${max})`;
  return z
    .string({ error: message })
    .optional()
    .superRefine((v, ctx) => {
      if (v === undefined || v === '') return;
      const n = /^-?\d+$/.test(v) ? Number(v) : Number.NaN;
      if (!Number.isInteger(n) || n < min || n > max) ctx.addIssue({ code: 'custom', message });
    })
    .meta({
      description: `${min} to ${max}, default ${fallback}`,
      type: 'integer',
      minimum: min,
      maximum: max,
      ...(typeof fallback === 'number' ? { default: fallback } : {}),
    } as Record<string, unknown>);
}

/**
 * `limit` of the lists the spec gives no bound for (every list endpoint takes one, the spec says): the catalog 1 to
 * 100 (search's own bound), an account's keys, connections and services 1 to 500 (the transactions' bound); absent, the whole list.
 */
export const LIST_LIMITS = { agents: 100, account: 500 } as const;
export const listQuery = (max: number, fallback = 'all') => z.object({ limit: intQuery('limit', 1, max, fallback) });

/**
 * A service name: `@farebox/protocol`'s one policy (lower-case ASCII letters, digits and single
 * hyphens, 1 to 32, starting and ending with a letter or digit); its messages
 * (`service required`, `service name too long (max 32)`, `invalid service name: ...`).
 */
const serviceNameRule = (v: string, ctx: z.RefinementCtx) => {
  const problem = serviceNameProblem(v);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
};
const SERVICE_NAME_META = { minLength: 1, maxLength: LIMITS.serviceName, pattern: SERVICE_NAME_PATTERN.source } as Record<string, unknown>;

/** Names and ids carry no control character at all (not even tab or a line break) and no unpaired surrogate. */
const nameText = (field: string) => (v: string, ctx: z.RefinementCtx) => {
  const problem = textProblem(v, 'name');
  if (problem) ctx.addIssue({ code: 'custom', message: `invalid ${field}: ${problem}` });
};

const Email = z.string({ error: 'email required' }).trim().min(1, 'email required').max(254, 'email too long (max 254)').email('invalid email');
/** Form posts only: where to go after signing in (a same-origin path). */
const Next = z.string().optional();

export const SignupBody = z
  .object({
    email: Email,
    password: z.string({ error: 'password required' }).min(8, 'password too short (min 8)').max(256, 'password too long (max 256)'),
    next: Next,
  })
  .meta({ id: 'SignupBody', description: 'E-mail and a password of 8 to 256 characters. JSON or an HTML form.' });

export const LoginBody = z
  .object({
    email: Email,
    password: z.string({ error: 'password required' }).min(1, 'password required').max(256, 'password too long (max 256)'),
    next: Next,
  })
  .meta({ id: 'LoginBody', description: 'E-mail and password. JSON or an HTML form.' });

export const TopupBody = z
  .strictObject(
    {
      amount: z
        .number({ error: 'invalid amount (must be 0 < n <= 1000)' })
        .gt(0, 'invalid amount (must be 0 < n <= 1000)')
        .lte(1000, 'invalid amount (must be 0 < n <= 1000)'),
    },
    { error: unknownField },
  )
  .meta({
    id: 'TopupBody',
    description: 'USD, 0 < amount <= 1000 (a JSON number).',
  });

export const CallBody = z
  .strictObject(
    {
      service: z
        .string({ error: (iss) => (iss.input === undefined || iss.input === null ? 'service required' : 'service must be a string') })
        .superRefine(serviceNameRule)
        .meta(SERVICE_NAME_META),
      /** The service's input ({} for none). */
      payload: z.record(z.string(), z.unknown(), {
        error: (iss) => (iss.input === undefined ? "payload required (a JSON object: the service's input, {} for none)" : 'payload must be an object'),
      }),
    },
    {
      error: (iss) =>
        iss.code === 'unrecognized_keys'
          ? `unknown field${iss.keys.length > 1 ? 's' : ''}: ${iss.keys.join(', ')} (only service and payload are accepted; put the service's input inside payload)`
          : iss.code === 'invalid_type'
            ? 'body must be a JSON object'
            : undefined,
    },
  )
  .meta({ id: 'CallBody', description: 'Exactly `{ service, payload }`: the service input goes inside `payload`.' });

const ServiceName = z.string({ error: 'service required' }).superRefine(serviceNameRule).meta(SERVICE_NAME_META);
/** The lowest price (MIN_PRICE_BASE_UNITS): 20 base units, whose 5 % platform fee is one base unit. */
const MIN_PRICE = Number(MIN_PRICE_BASE_UNITS);
const Price = z
  .number({ error: 'pricePerCallLamports required (integer base units)' })
  .int('pricePerCallLamports must be an integer (base units)')
  .min(
    MIN_PRICE,
    `pricePerCallLamports must be at least ${MIN_PRICE} base units (0.000002 USDC), so that the 5 % platform fee of a call is at least one base unit`,
  )
  .max(Number.MAX_SAFE_INTEGER, 'pricePerCallLamports too large');
const Endpoint = z.string({ error: 'endpoint required' }).min(1, 'endpoint required').max(256, 'endpoint too long (max 256)');
const Description = z.string({ error: 'description required' }).max(512, 'description too long (max 512)');

/** How a price is asked for: USDC as a decimal string (`price`), or base units (`pricePerCallLamports`). */
export const PRICE_REQUIRED = 'price required: USDC per call as a decimal string, e.g. "0.002" (or pricePerCallLamports, in base units: 20000)';
const PriceText = z
  .string({ error: 'price must be a string: USDC per call as a decimal string, e.g. "0.002"' })
  .max(40, 'price must be a string: USDC per call as a decimal string, e.g. "0.002"')
  .meta({ description: 'USDC per call as a decimal string, e.g. "0.002" (at most 7 decimals, at most 100 unless maxPrice says more).' });
const MaxPrice = z
  .string({ error: 'maxPrice must be a decimal string of USDC, e.g. "500"' })
  .max(40, 'maxPrice must be a decimal string of USDC, e.g. "500"')
  .meta({ description: 'Accept a price above 100 USDC per call, up to this (USDC, a decimal string).' });
const onePrice = (b: { price?: string | undefined; pricePerCallLamports?: number | undefined }, ctx: z.RefinementCtx, required: boolean) => {
  if (b.price !== undefined && b.pricePerCallLamports !== undefined)
    ctx.addIssue({ code: 'custom', message: 'give price (USDC, e.g. "0.002") or pricePerCallLamports (base units), not both' });
  else if (required && b.price === undefined && b.pricePerCallLamports === undefined) ctx.addIssue({ code: 'custom', message: PRICE_REQUIRED });
};

export const RegisterServiceBody = z
  .strictObject(
    {
      service: ServiceName,
      price: PriceText.optional(),
      pricePerCallLamports: Price.optional(),
      maxPrice: MaxPrice.optional(),
      endpoint: Endpoint,
      description: Description,
    },
    { error: unknownField },
  )
  .superRefine((b, ctx) => onePrice(b, ctx, true))
  .meta({
    id: 'RegisterServiceBody',
    description:
      'A service registered from the account (signed by its wallet); the price as `price`, USDC as a decimal string ("0.002"), or `pricePerCallLamports`, base units (20000). A price over 100 USDC needs `maxPrice`.',
  });

export const UpdateServiceBody = z
  .strictObject(
    {
      price: PriceText.optional(),
      pricePerCallLamports: Price.optional(),
      maxPrice: MaxPrice.optional(),
      endpoint: Endpoint.optional(),
      description: Description.optional(),
    },
    { error: unknownField },
  )
  .superRefine((b, ctx) => onePrice(b, ctx, false))
  .meta({ id: 'UpdateServiceBody', description: 'Any of the price (`price` in USDC or `pricePerCallLamports`), the endpoint and the description.' });

export const NameBody = z
  .object({
    name: z
      .string({ error: 'name required' })
      .refine((s) => s.trim().length > 0, 'name required')
      // Characters as people count them (code points): 64 emoji are a 64-character name.
      .refine((s) => codePointLength(s) <= 64, 'name too long (max 64)')
      .superRefine(nameText('name'))
      .meta({ minLength: 1, maxLength: 64 } as Record<string, unknown>),
  })
  .meta({ id: 'NameBody', description: 'A name, 1 to 64 characters (code points), without control characters.' });

export const EmptyBody = z.object({}).meta({ id: 'EmptyBody' });

const usdAmount = (field: string, example: string) =>
  z
    .union([z.number(), z.string()], { error: `${field} must be a USD amount such as ${example}` })
    .nullable()
    .optional()
    .meta({ description: `USD (a number or a decimal string), more than 0 and at most 10000; null removes it.` });

/**
 * A credential's spending policy (API keys, OAuth connections): a limit per
 * period (UTC day, week from Monday, month, or `total`), the services it may
 * call, the highest price of one call. On an update an absent field is kept
 * and null removes it. docs/api.md, "Spending policies".
 */
export const SpendingPolicyFields = {
  limit_usd: usdAmount('limit_usd', '5 or 2.50'),
  limit_period: z
    .enum(['day', 'week', 'month', 'total'], { error: 'limit_period must be day, week, month or total' })
    .nullable()
    .optional()
    .meta({ description: 'The period of limit_usd: a UTC day, a UTC week from Monday, a UTC month, or the whole life of the credential.' }),
  allowed_services: z
    .array(z.string({ error: 'allowed_services must be a list of service names' }).superRefine(serviceNameRule), {
      error: 'allowed_services must be a list of service names',
    })
    .max(100, 'allowed_services names at most 100 services')
    .nullable()
    .optional()
    .meta({ description: 'The only services the credential may call; null: every service.' }),
  max_call_usd: usdAmount('max_call_usd', '0.05'),
};

export const SpendingPolicyBody = z.strictObject(SpendingPolicyFields, { error: unknownField }).meta({ id: 'SpendingPolicyBody' });
export type SpendingPolicyInput = z.output<typeof SpendingPolicyBody>;

export const CreateApiKeyBody = z
  .strictObject(
    {
      name: NameBody.shape.name,
      kind: z
        .enum(['spend', 'manage'], { error: 'kind must be spend or manage' })
        .optional()
        .meta({ description: '`spend` or `manage`; default `spend` with a spending policy, else `manage`. A key with a policy is always a spend key.' }),
      ...SpendingPolicyFields,
    },
    { error: unknownField },
  )
  .meta({ id: 'CreateApiKeyBody', description: "The key's name, its kind and, optionally, its spending policy." });

export const UpdateApiKeyBody = z
  .strictObject({ name: NameBody.shape.name.optional(), ...SpendingPolicyFields }, { error: unknownField })
  .meta({ id: 'UpdateApiKeyBody', description: 'Any of the name and the spending policy fields (absent: kept; null: removed).' });

export const OpenDisputeBody = z
  .strictObject(
    {
      escrowId: z.string({ error: 'escrowId required' }).superRefine(nameText('escrowId')),
      proof: z
        .string({ error: 'proof required (a transaction signed by the funder, see docs/operator.md)' })
        .min(1, 'proof required')
        .max(4096, 'proof too long'),
      reason: z.string().max(500, 'reason too long (max 500)').optional(),
    },
    { error: unknownField },
  )
  .meta({ id: 'OpenDisputeBody', description: "A dispute on a direct escrow: the funder's signed proof is the credential." });

export const ResolveDisputeBody = z
  .strictObject({
    action: z.enum(['refund', 'split'], { error: 'action must be refund or split' }),
    payer_base_units: z.union([z.string(), z.number().int()]).optional(),
    receiver_base_units: z.union([z.string(), z.number().int()]).optional(),
  })
  .meta({
    id: 'ResolveDisputeBody',
    description: '`refund` (the whole balance back to the funder) or `split` (amounts in base units summing to the balance).',
  });

const IDEMPOTENCY_KEY = 'invalid Idempotency-Key (1 to 255 characters)';

/** The 409 of an operation that takes an `Idempotency-Key` (docs/api.md, "Idempotency"). */
export const IDEMPOTENCY_CONFLICT =
  'idempotency key reused with a different request; a request with this idempotency key is still in progress (`Retry-After`: the seconds until its lease ends, when a retry runs)';

export const IdempotencyHeaders = z.object({
  'idempotency-key': z
    .string({ error: IDEMPOTENCY_KEY })
    .min(1, IDEMPOTENCY_KEY)
    .max(255, IDEMPOTENCY_KEY)
    .optional()
    .meta({ description: 'Makes a retry answer the first response (1 to 255 characters).' }),
});

export const CallHeaders = IdempotencyHeaders.extend({
  'farebox-max-cost': z.string().optional().meta({ description: 'The most this call may cost, in USD (a dynamic price above it is refused).' }),
  'farebox-approval': z.string().optional().meta({
    description:
      "OAuth tokens only: the approval_id of a `403 CONFIRMATION_REQUIRED` answer, once the person approved the call on the gateway's page (/approve/<id>).",
  }),
});

export const ServiceParams = z.object({ service: z.string() });
export const IdParams = z.object({ id: z.string() });
export const EscrowParams = z.object({ escrowId: z.string() });
