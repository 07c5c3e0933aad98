import { z } from 'zod';

// The schemas of credentials' spending policies (docs/api.md, "Spending policies").

const Timestamp = z.string().meta({ format: 'date-time' });

/** A credential's spending policy and its budget this period (docs/api.md, "Spending policies"). */
export const SpendingPolicy = z
  .object({
    limit_usd: z.number().nullable(),
    limit_period: z.enum(['day', 'week', 'month', 'total']).nullable(),
    allowed_services: z.array(z.string()).nullable(),
    max_call_usd: z.number().nullable(),
    spent_usd: z.number().nullable().meta({ description: 'Spent this period, calls in flight included (null without a limit).' }),
    remaining_usd: z.number().nullable(),
    resets_at: Timestamp.nullable().meta({ description: 'When the period ends (null without a limit, or for total).' }),
  })
  .meta({ id: 'SpendingPolicy' });

/** The machine-readable fields of a refusal by a spending policy, next to `error` (402 budget; 403 service or price, with allowed_services or max_call_usd). */
export const RefusalFields = {
  limit_source: z.enum(['key', 'connection']).optional(),
  limit_usd: z.number().nullable().optional(),
  remaining_usd: z.number().nullable().optional(),
  resets_at: Timestamp.nullable().optional(),
  allowed_services: z.array(z.string()).optional(),
  max_call_usd: z.number().optional(),
};

/** The fields of a refusal by a spending policy (402 budget, 403 service or price), next to `error`. */
export const SpendingRefusal = z
  .object({
    error: z.string(),
    limit_source: z.enum(['key', 'connection']),
    limit_usd: z.number().nullable(),
    remaining_usd: z.number().nullable(),
    resets_at: Timestamp.nullable(),
  })
  .meta({ id: 'SpendingRefusal' });

/** The 400 messages of a policy body (the contract's SpendingPolicyFields and the gateway's amount rules). */
export const POLICY_ERRORS =
  'limit_usd must be a USD amount such as 5 or 2.50; limit_usd must be more than 0 and at most 10000 USD; limit_period must be day, week, month or total; limit_period required with limit_usd (day, week, month or total); allowed_services must be a list of service names; max_call_usd must be a USD amount such as 0.05; max_call_usd must be more than 0 and at most 10000 USD';
