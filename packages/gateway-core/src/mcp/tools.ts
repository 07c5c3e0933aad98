import { formatAmount } from '@farebox/protocol';
import {
  IDEMPOTENCY_KEY_META,
  registerMcpTools,
  toolError,
  type FareboxApi,
  type McpOtherResult,
  type McpToolHost,
  type McpToolResult,
  type ToolRegistry,
} from '@farebox/contract';
import type { Principal, User } from '../auth/accounts.js';
import { callIdOf, type CallAnswer, type CallOptions } from '../calls.js';
import { asDatabaseUnavailable } from '../db-errors.js';
import { errorAnswer, GatewayError } from '../errors.js';
import { budgetLeft, confirmationFields, type CallConfirmations } from '../oauth/confirmations.js';

/** The `requestState` of a URL-mode elicitation: the approval the person decides on the gateway's page. */
const URL_STATE = 'url:';
import { requireScope } from '../oauth/scopes.js';

export { MCP_INSTRUCTIONS } from '@farebox/contract';

/** What the MCP tools need from the gateway core (the core satisfies it). */
export interface McpToolDeps {
  catalog: { list(q?: string): Promise<unknown[]> };
  calls: { call(principal: Principal, body: unknown, opts?: Pick<CallOptions, 'maxCost' | 'idempotencyKey' | 'confirmed'>): Promise<CallAnswer> };
  account: {
    balance(user: User): Promise<unknown>;
    transactions(user: User, limit: unknown): Promise<unknown[]>;
  };
  /** Paid calls the user confirms (OAuth connections); without it, calls run unconfirmed. */
  callConfirmations?: CallConfirmations;
  /** The spending policy of the principal's key or connection and its budget now (null without one). */
  spendingPolicy?(principal: Principal): Promise<unknown>;
}

/**
 * The Farebox API of one principal, in process: what the MCP tools of
 * `@farebox/contract` run over at the gateway's `/mcp`. `maxCost`: the most
 * a call may charge (what the user confirmed); `idempotencyKey`: the
 * `tools/call`'s `_meta["farebox/idempotencyKey"]` (a retry under it is
 * charged once, as `POST /v1/call`'s `Idempotency-Key`); `confirmed`: this
 * flow confirmed the call with the person (or needed not), so the call's own
 * gate is not asked again.
 */
export function mcpApi(deps: McpToolDeps, principal: Principal, maxCost?: bigint, idempotencyKey?: string, confirmed?: boolean): FareboxApi {
  return {
    agents: {
      list: () => deps.catalog.list(),
      search: (query) => deps.catalog.list(query),
    },
    async call(service, payload) {
      const answer = await deps.calls.call(
        principal,
        { service, payload },
        {
          ...(maxCost === undefined ? {} : { maxCost: formatAmount(maxCost) }),
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
          ...(confirmed ? { confirmed } : {}),
        },
      );
      if (!answer.ok) {
        // The REST answer's fields (code, callId, paidWith, escrowId, ...) without its trace, which stays REST's.
        const { error, trace: _trace, code: _code, ...fields } = answer.value;
        throw new GatewayError('UPSTREAM', error, { refunded: true, ...fields });
      }
      return answer.value as Awaited<ReturnType<FareboxApi['call']>>;
    },
    async balance() {
      const [balance, policy] = await Promise.all([deps.account.balance(principal.user), deps.spendingPolicy?.(principal) ?? null]);
      // The key's or connection's own budget next to the account's money (docs/api.md, "Spending policies").
      return { ...(balance as Record<string, unknown>), ...(policy ? { spending_policy: policy } : {}) };
    },
    transactions: (options = {}) => deps.account.transactions(principal.user, options.limit),
  };
}

const usd = (units: bigint) => `$${formatAmount(units, { trim: true })}`;

/** What the SDK's request context tells about the client (2026-07-28: the request's `_meta` envelope). */
interface RequestContext {
  mcpReq?: {
    /** The request's `_meta` (the envelope's reserved keys lifted out). */
    _meta?: Record<string, unknown>;
    envelope?: Record<string, unknown>;
    inputResponses?: Record<string, unknown>;
    requestState?: () => unknown;
  };
}

/**
 * How the client can be asked in this request: MCP 2026-07-28 (an
 * `input_required` result, answered by the retried request) with the
 * elicitation capability declared, in form mode, URL mode or both. The 2025
 * revisions at this stateless `/mcp` cannot carry a request to the client:
 * they get the link.
 */
function elicitModes(ctx: RequestContext | undefined): { form: boolean; url: boolean } {
  const envelope = ctx?.mcpReq?.envelope;
  const version = envelope?.['io.modelcontextprotocol/protocolVersion'];
  if (typeof version !== 'string' || version < '2026') return { form: false, url: false };
  const elicitation = (envelope?.['io.modelcontextprotocol/clientCapabilities'] as { elicitation?: { form?: unknown; url?: unknown } } | undefined)
    ?.elicitation;
  if (elicitation === undefined) return { form: false, url: false };
  // `elicitation: {}` declares form mode (the 2025-06-18 shape).
  return { form: elicitation.form !== undefined || elicitation.url === undefined, url: elicitation.url !== undefined };
}

/**
 * `call_agent` for an OAuth connection: a call above the connection's
 * threshold runs only once the person confirmed it (oauth/confirmations.ts),
 * on the gateway's own page: through URL-mode elicitation when the client
 * declares it (an `input_required` result whose `requestState` is the
 * approval's id; the retry runs it once the page approved it), otherwise a
 * tool error naming the link, and the retry with its `approval_id` runs it.
 * Form-mode elicitation, which the client answers itself, counts only for a
 * connection whose owner chose on the consent page that the app confirms for them.
 */
async function confirmedCall(
  c: CallConfirmations,
  deps: McpToolDeps,
  principal: Principal,
  args: Record<string, unknown>,
  ctx: RequestContext | undefined,
  run: (api?: FareboxApi) => Promise<McpToolResult>,
  idempotencyKey: string | undefined,
): Promise<McpToolResult | McpOtherResult> {
  const service = String(args.service);
  const over = (max: bigint | undefined) => run(mcpApi(deps, principal, max, idempotencyKey, true));
  // A confirmed call the service failed (refunded) gives its approval back for one retry.
  const confirmed = async (id: string, max: bigint) => {
    try {
      return await over(max);
    } catch (err) {
      if (err instanceof GatewayError && err.data?.refunded === true && (await c.reopen(principal, id))) {
        throw new GatewayError(
          err.code,
          `${err.message} (refunded; the approval pays for one retry: call call_agent again with the same service and approval_id "${id}")`,
          { ...err.data, approval_id: id },
        );
      }
      throw err;
    }
  };
  if (typeof args.approval_id === 'string') return confirmed(args.approval_id, await c.useApproved(principal, args.approval_id, service));
  const state = ctx?.mcpReq?.requestState?.();
  const answer = ctx?.mcpReq?.inputResponses?.confirm as { action?: unknown; content?: { confirm?: unknown } } | undefined;
  // The app answered a form for the person without the owner's leave: not a confirmation; the person is asked below.
  const selfAnswered =
    typeof state === 'string' &&
    !state.startsWith(URL_STATE) &&
    answer?.action === 'accept' &&
    answer.content?.confirm === true &&
    !(await c.appConfirms(principal));
  if (typeof state === 'string' && answer && selfAnswered) await c.refuse(principal, state);
  else if (typeof state === 'string' && answer) {
    // URL mode: the person approved (or not) on the gateway's page; the client's answer only says the page was left.
    if (state.startsWith(URL_STATE)) {
      const id = state.slice(URL_STATE.length);
      if (answer.action === 'accept') return confirmed(id, await c.useApproved(principal, id, service));
      await c.refuse(principal, id);
      return toolError(`the user ${answer.action === 'decline' ? 'declined' : 'cancelled'} the approval of ${service}: nothing was charged`, {
        code: answer.action === 'decline' ? 'CONFIRMATION_DECLINED' : 'CONFIRMATION_CANCELLED',
        service,
      });
    }
    if (answer.action === 'accept' && answer.content?.confirm === true) return confirmed(state, await c.useElicited(principal, state, service));
    await c.refuse(principal, state);
    const code = answer.action === 'accept' ? 'CONFIRMATION_NOT_GIVEN' : answer.action === 'decline' ? 'CONFIRMATION_DECLINED' : 'CONFIRMATION_CANCELLED';
    const what =
      answer.action === 'accept' ? 'did not tick the confirmation' : answer.action === 'decline' ? 'declined the call' : 'cancelled the confirmation';
    return toolError(`the user ${what} of ${service}: nothing was charged`, { code, service });
  }
  const check = await c.check(principal, service);
  if (!check.needed) return over(check.ceiling);
  const left = budgetLeft(check.budget);
  const modes = elicitModes(ctx);
  if (modes.url) {
    const approval = await c.open(principal, 'link', service, check.price);
    return {
      resultType: 'input_required',
      inputRequests: {
        confirm: {
          method: 'elicitation/create',
          params: {
            mode: 'url',
            message: `Approve paying ${usd(check.price)} from your Farebox credits to call ${service} (before ${approval.expiresAt}).${left}`,
            url: approval.url,
            elicitationId: approval.id,
          },
        },
      },
      requestState: `${URL_STATE}${approval.id}`,
    };
  }
  if (modes.form && (await c.appConfirms(principal))) {
    const approval = await c.open(principal, 'elicitation', service, check.price);
    return {
      resultType: 'input_required',
      inputRequests: {
        confirm: {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            message: `Pay ${usd(check.price)} from your Farebox credits to call ${service}?${left}`,
            requestedSchema: {
              type: 'object',
              properties: { confirm: { type: 'boolean', title: `Pay ${usd(check.price)} for this call to ${service}`, default: false } },
              required: ['confirm'],
            },
          },
        },
      },
      requestState: approval.id,
    };
  }
  const approval = await c.open(principal, 'link', service, check.price);
  return toolError(
    `this call to ${service} costs ${usd(check.price)} and needs the user's approval: ask them to open ${approval.url} and approve it ` +
      `(before ${approval.expiresAt}), then call call_agent again with the same service and approval_id "${approval.id}". Nothing was charged.${left}`,
    confirmationFields(approval, service, check),
  );
}

/** The `tools/call`'s idempotency key (`_meta["farebox/idempotencyKey"]`); a bad one is refused before anything runs. */
function idempotencyKeyOf(ctx: RequestContext | undefined): string | undefined {
  const key = ctx?.mcpReq?._meta?.[IDEMPOTENCY_KEY_META];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key.length === 0 || key.length > 255)
    throw new GatewayError('BAD_REQUEST', `invalid _meta["${IDEMPOTENCY_KEY_META}"] (1 to 255 characters)`);
  return key;
}

/**
 * A failure as the tool error `/mcp` answers: a lost database is the 503
 * meaning ('database unavailable; nothing was charged, retry in a few
 * seconds', `code` UNAVAILABLE, `retryAfterSeconds`), never a bare driver
 * message; an attempt still in progress under the same key names its
 * `retryAfterSeconds`; once the call had its id, `callId` is there.
 */
export function mcpToolError(thrown: unknown): McpToolResult | undefined {
  const err = asDatabaseUnavailable(thrown) ?? thrown;
  if (!(err instanceof GatewayError)) return undefined;
  const { error, ...fields } = errorAnswer(err, callIdOf(thrown));
  return toolError(error, fields);
}

/**
 * How `/mcp` runs a tool for `principal`: the connection's scope is checked
 * first; a paid call above the connection's threshold is confirmed by the
 * user first; `call_agent` runs under the request's idempotency key when it
 * names one; a gateway refusal becomes a tool error carrying its message and code.
 */
export function mcpToolHost(principal: Principal, deps?: McpToolDeps): McpToolHost {
  const c = deps?.callConfirmations;
  const confirming = c && deps && principal.via === 'oauth' ? c : undefined;
  return {
    before: (tool) => requireScope(principal, tool.scope),
    onError: mcpToolError,
    ...(deps
      ? {
          around: (tool, args, ctx, run) => {
            if (tool.name !== 'call_agent') return run();
            const key = idempotencyKeyOf(ctx as RequestContext);
            if (confirming) return confirmedCall(confirming, deps, principal, args, ctx as RequestContext, run, key);
            return key === undefined ? run() : run(mcpApi(deps, principal, undefined, key));
          },
        }
      : {}),
  };
}

/** Registers the MCP tools of `@farebox/contract` on a `/mcp` server, run as `principal`. */
export function registerGatewayMcpTools(server: ToolRegistry, deps: McpToolDeps, principal: Principal): void {
  registerMcpTools(server, mcpApi(deps, principal), mcpToolHost(principal, deps));
}
