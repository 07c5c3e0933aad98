import { LedgerError, type Budget, type BudgetUse, type Ledger } from '@farebox/ledger';
import type { Principal } from '../auth/accounts.js';
import { budgetExceeded, budgetFor, checkCall, policyView, type LimitSource, type PolicyView, type SpendingPolicy } from '../auth/policy.js';
import type { CreditsPort } from '../calls.js';
import { systemClock } from '../clock.js';

interface Spender {
  credentialId: string;
  source: LimitSource;
  policy: SpendingPolicy;
}

/**
 * Spending policies at call time (API keys and OAuth connections; docs/api.md,
 * "Spending policies"). A call names its credential (the principal) to its
 * hold and to the wallet path; with a policy, before its hold, the service must be allowed and the
 * price within the per-call maximum (403); its hold carries the credential's
 * budget for the period, reserved by the ledger in the hold's own statement
 * (402 when it does not fit; nothing is charged). Posts, refunds and the
 * reapers settle the budget in the ledger. The wallet path's payments reserve
 * against the same budget, recorded with the payment. A credential without a policy takes none of these steps.
 */
export function createSpendingLimits(options: {
  ledger: Pick<Ledger, 'budgets'>;
  now?: () => number;
  /** After a hold or a wallet payment counted against a budget (the webhook `budget.threshold_reached`; off the call's path). */
  onBudgetUse?: (use: { accountId: string; credentialId: string; source: LimitSource; period: string }) => void;
}) {
  const { ledger, onBudgetUse } = options;
  const now = options.now ?? systemClock;
  // The credential is passed explicitly (no AsyncLocalStorage: on Node 20 an enabled one makes every promise of the process pay a hook).
  const spenderOf = (principal: Principal | undefined): Spender | undefined =>
    !principal?.policy || principal.via === 'session'
      ? undefined
      : { credentialId: principal.credentialId, source: principal.via === 'oauth' ? 'connection' : 'key', policy: principal.policy };

  async function use(s: Spender, at: number): Promise<BudgetUse | undefined> {
    const b = budgetFor(s.credentialId, s.policy, at);
    return b ? (await ledger.budgets([b])).get(`${b.credential}\n${b.period}`) : undefined;
  }

  /** The policy's checks of a call about to pay `amount` for `service`; the budget it counts against. */
  async function admit(s: Spender, service: string, amount: bigint, at: number): Promise<Budget | undefined> {
    await checkCall(s.source, s.policy, service, amount, at, () => use(s, at));
    return budgetFor(s.credentialId, s.policy, at);
  }

  const refusal = (s: Spender, err: unknown, amount: bigint, at: number) =>
    err instanceof LedgerError && err.code === 'BUDGET_EXCEEDED' ? budgetExceeded(s.source, s.policy, err.data, amount, at) : err;

  return {
    /** The policy of the principal's credential and its budget now (`GET /v1/me`, MCP `get_balance`); null without one. */
    async view(principal: Principal): Promise<PolicyView | null> {
      const s = spenderOf(principal);
      if (!s) return null;
      const at = now();
      return policyView(s.policy, await use(s, at), at);
    },

    /** A replayed answer of `amount` for `service` (an idempotent retry): the replaying credential's allowlist and per-call maximum apply. */
    async admitReplay(principal: Principal, service: string, amount: bigint): Promise<void> {
      const s = spenderOf(principal);
      if (s) await checkCall(s.source, s.policy, service, amount, now(), () => use(s, now()));
    },

    /**
     * Wraps the wallet path (paid on chain when credits fall short) so that,
     * for a principal with a policy, its amount counts against the same budget: the
     * policy's checks first, a budget that cannot cover it refused before
     * anything moves, and the budget handed to the wallet path, whose payment
     * reserves it in the ledger when it is recorded and spends it or gives it
     * back when it is resolved (also by reconciliation after a crash). A retry
     * on credits (after a wallet top-up) reserves with its own hold.
     */
    wrapWalletPath<I extends { principal: Principal; amount: bigint; service: { service: string }; budget?: Budget }, R>(
      pay: (input: I) => Promise<R>,
    ): (input: I) => Promise<R> {
      return async (input) => {
        const s = spenderOf(input.principal);
        if (!s) return pay(input);
        const at = now();
        const budget = await admit(s, input.service.service, input.amount, at);
        if (!budget) return pay(input);
        const used = (await use(s, at)) ?? { spent: 0n, held: 0n };
        if (used.spent + used.held + input.amount > budget.limit) {
          throw budgetExceeded(s.source, s.policy, { spent: used.spent.toString(), held: used.held.toString() }, input.amount, at);
        }
        let paid: R;
        try {
          paid = await pay({ ...input, budget });
        } catch (err) {
          throw refusal(s, err, input.amount, at);
        }
        onBudgetUse?.({ accountId: input.principal.user.id, credentialId: s.credentialId, source: s.source, period: budget.period });
        return paid;
      };
    },

    /** Wraps the credits port so a hold made for a principal with a policy follows it and reserves against its budget. */
    wrapCredits(credits: CreditsPort): CreditsPort {
      // No async frame of its own on the call path: the hold's promise, its refusal translated.
      const holdUnder = (s: Spender, input: Parameters<CreditsPort['hold']>[0], budget: Budget | undefined, at: number) => {
        if (budget) input.budget = budget;
        const held = credits.hold(input).catch((err: unknown) => {
          throw refusal(s, err, input.amount, at);
        });
        if (!budget || !onBudgetUse) return held;
        return held.then((r) => {
          onBudgetUse({ accountId: input.accountId, credentialId: s.credentialId, source: s.source, period: budget.period });
          return r;
        });
      };
      return {
        hold(input) {
          const s = spenderOf(input.principal);
          if (!s) return credits.hold(input);
          const at = now();
          // A call the policy allows takes no extra turn (the checks' refusals read the budget).
          const allowed =
            (!s.policy.allowedServices || s.policy.allowedServices.includes(input.service)) && (s.policy.maxCall === null || input.amount <= s.policy.maxCall);
          if (allowed) return holdUnder(s, input, budgetFor(s.credentialId, s.policy, at), at);
          return admit(s, input.service, input.amount, at).then((budget) => holdUnder(s, input, budget, at));
        },
        post: (holdId, input) => credits.post(holdId, input),
        void: (holdId, reason) => credits.void(holdId, reason),
        idempotent: (accountId, key, hash, fn) => credits.idempotent(accountId, key, hash, fn),
      };
    },
  };
}

export type SpendingLimits = ReturnType<typeof createSpendingLimits>;
