import { z } from 'zod';
import { SpendingPolicyFields } from './inputs.js';
import * as S from './all-schemas.js';

/**
 * OAuth connections with the threshold of the calls their user confirms
 * (docs/oauth.md, "Calls the user confirms"; docs/api.md, "OAuth
 * connections"): `GET /v1/oauth/connections` shows each connection's
 * threshold, `PATCH /v1/oauth/connections/:id` changes it together with (or
 * apart from) the spending policy.
 */

const unknownField = (iss: { code: string; keys?: string[] }) =>
  iss.code === 'unrecognized_keys' ? `unknown field: ${(iss.keys ?? []).join(', ')}` : undefined;

/** The refusals of bad threshold input (400), as the gateway words them. */
export const THRESHOLD_ERRORS =
  'confirm_above_usd must be a USD amount such as 0.10, or empty for no threshold; confirm_above_usd must be between 0 and 10000 USD; confirm_below_left_percent must be a whole number from 0 to 100; confirm_by_app must be true or false';

/** The threshold as a connection shows it. */
export const ConfirmationThreshold = z.object({
  confirm_above_usd: z
    .number()
    .nullable()
    .meta({ description: 'A call_agent priced above this asks the user first (0: every paid call; null: never by price). Default 0.10.' }),
  confirm_below_left_percent: z
    .number()
    .int()
    .meta({ description: 'A call_agent that would leave less than this percent of the spending limit asks the user first (0: never). Default 10.' }),
  confirm_by_app: z.boolean().meta({
    description:
      "true: the owner lets the app confirm calls for them (MCP form-mode elicitation, answered by the app). false (default): the person confirms on the gateway's page.",
  }),
});

/** The threshold fields of a connection's update (absent: kept). */
export const ConfirmationThresholdFields = {
  confirm_above_usd: z
    .union([z.number(), z.string()], { error: 'confirm_above_usd must be a USD amount such as 0.10, or empty for no threshold' })
    .nullable()
    .optional()
    .meta({ description: 'USD (a number or a decimal string), 0 to 10000: a call priced above it asks the user first; null or "": never by price.' }),
  confirm_below_left_percent: z
    .union([z.number(), z.string()], { error: 'confirm_below_left_percent must be a whole number from 0 to 100' })
    .optional()
    .meta({ description: 'A whole number from 0 to 100: a call that would leave less than this percent of the limit asks first; 0: never.' }),
  confirm_by_app: z
    .boolean({ error: 'confirm_by_app must be true or false' })
    .optional()
    .meta({ description: 'true: the app may confirm calls for the owner (MCP form-mode elicitation); false: the person confirms on the gateway page.' }),
};

export const UpdateOAuthConnectionBody = z.strictObject({ ...SpendingPolicyFields, ...ConfirmationThresholdFields }, { error: unknownField }).meta({
  id: 'UpdateOAuthConnectionBody',
  description: 'Any of the spending policy fields (absent: kept; null: removed) and of the confirmation threshold fields (absent: kept).',
});

/**
 * An OAuth connection as the API answers it: the spending policy's view
 * (schemas.ts) and the confirmation threshold. It replaces schemas.ts's
 * OAuthConnection in the operations (same component name in the OpenAPI document).
 */
export const OAuthConnection = S.OAuthConnection.extend(ConfirmationThreshold.shape).meta({
  id: 'OAuthConnection',
  description:
    'An app authorized through OAuth, with its spending policy (daily_limit_*: the limit when its period is day; spent_today_*: what it spent this UTC day) and the threshold above which its calls ask the user first (confirm_*).',
});
