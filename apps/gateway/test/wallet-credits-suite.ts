import { randomBytes } from 'node:crypto';
import { Asset, TransactionBuilder } from '@stellar/stellar-sdk';
import fc from 'fast-check';
import { grantOperator } from '@farebox/gateway-core';
import { parseAmount } from '@farebox/protocol';
import { LOCAL_PASSPHRASE } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropTestSchema } from './harness.js';
import { startDevnetForSettlement, startStack, type KitUser, type Stack } from './settlement-kit.js';

const USDC = 10_000_000n;
/** The called service's price: above the sign-up credit's remainder after one call, so later calls take the wallet path. */
const PRICE = '3.5';

type Op =
  | { kind: 'topup'; who: number; usd: number; key: string | null; gw: number }
  | { kind: 'call'; who: number; gw: number }
  | { kind: 'fund'; who: number; usd: number };

const opArb = (gateways: number): fc.Arbitrary<Op> =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('topup' as const),
        who: fc.nat(1),
        usd: fc.integer({ min: 1, max: 12 }),
        key: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: null }),
        gw: fc.nat(gateways - 1),
      }),
    },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('call' as const), who: fc.nat(1), gw: fc.nat(gateways - 1) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('fund' as const), who: fc.nat(1), usd: fc.integer({ min: 1, max: 20 }) }) },
  );

/**
 * The model test of money paid from wallets: batches of paid top-ups (with
 * and without an Idempotency-Key, the same key reused), wallet-path calls
 * (the wallet pays through an escrow, or the shortfall becomes credits) and
 * fundings, each batch sent at once (across `gateways` gateways on one
 * database when there are two), on the devnet with paid top-ups
 * (`FAREBOX_FREE_TOPUPS=false`, as on testnet; the network stays `local` so
 * that the provider SDK's escrow, which knows the local network only by its
 * own passphrase, serves the wallet path). After every batch, for each account: the credits
 * that wallet payments back equal, to the base unit, the USDC that left its
 * wallet for the treasury as the chain records it; the ledger's audit and the
 * chain audit find nothing.
 */
export function walletCreditsSuite(name: string, opts: { gateways: 1 | 2; database?: () => { databaseUrl: string; databaseSchema: string } }) {
  describe(name, () => {
    const stacks: Stack[] = [];
    const db = opts.database?.();
    let service: string;
    beforeAll(async () => {
      const devnet = await startDevnetForSettlement();
      const env = { FAREBOX_FREE_TOPUPS: 'false', FAREBOX_KEYSTORE_KEY: randomBytes(32).toString('hex') };
      for (let i = 0; i < opts.gateways; i++) stacks.push(await startStack({ devnet, env, ...(db ? { gateway: db } : {}) }));
      service = `wc-${randomBytes(3).toString('hex')}`;
      await stacks[0]!.publish(service, PRICE);
      for (const s of stacks.slice(1)) await s.gw.core.mirror.syncOnce();
    }, 120_000);
    afterAll(async () => {
      for (const s of stacks.reverse()) await s.close();
      await stacks[0]?.devnet.close();
      if (db) await dropTestSchema(db.databaseSchema, db.databaseUrl);
    });

    /** USDC (base units) each wallet sent to the treasury in successful payments, read from the chain's own records. */
    function paidToTreasury(devnet: Stack['devnet'], treasury: string): Map<string, bigint> {
      const usdc = new Asset('USDC', stacks[0]!.gw.core.network.usdc.issuer);
      const paid = new Map<string, bigint>();
      for (const t of devnet.chain.txs.values()) {
        if (!t.successful) continue;
        const tx = TransactionBuilder.fromXDR(t.envelopeXdr, LOCAL_PASSPHRASE);
        if ('innerTransaction' in tx) continue;
        for (const op of tx.operations) {
          if (op.type !== 'payment' || op.destination !== treasury || !op.asset.equals(usdc)) continue;
          const from = op.source ?? tx.source;
          paid.set(from, (paid.get(from) ?? 0n) + parseAmount(op.amount));
        }
      }
      return paid;
    }

    it('credits from wallet payments == USDC that left the wallets for the treasury, per account, exactly, through racing top-ups and wallet-path calls', async () => {
      const s = stacks[0]!;
      const core = s.gw.core;
      const walletCredits = async (id: string) =>
        BigInt(
          (
            await core.db.query<{ n: string }>(
              `SELECT COALESCE(sum(amount), 0) AS n FROM journal WHERE account_id = $1 AND kind = 'topup' AND reference LIKE 'wallet:%'`,
              [id],
            )
          ).rows[0]!.n,
        );
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 30 })),
          fc.array(fc.array(opArb(opts.gateways), { minLength: 2, maxLength: 8 }), { minLength: 1, maxLength: 3 }),
          async (funds, batches) => {
            runs++;
            const users: KitUser[] = [await s.user(), await s.user()];
            for (const [i, u] of users.entries()) await s.fundWallet(u, BigInt(funds[i]!) * USDC);
            const keyOf = (u: number, k: string) => `run${runs}-${u}-${k}`;
            for (const batch of batches) {
              await Promise.all(
                batch.map(async (op) => {
                  const u = users[op.who]!;
                  if (op.kind === 'fund') return s.devnet.friendbot(u.wallet, BigInt(op.usd) * USDC);
                  const at = stacks[op.gw]!;
                  const as = (path: string, init: { body: unknown; headers?: Record<string, string> }) =>
                    at.request(path, { ...init, headers: { authorization: `Bearer ${u.key}`, ...init.headers } });
                  const request =
                    op.kind === 'topup'
                      ? as('/v1/topup', { body: { amount: op.usd }, headers: op.key ? { 'idempotency-key': keyOf(op.who, op.key) } : {} })
                      : as('/v1/call', { body: { service, payload: { n: 1 } } });
                  let timer: NodeJS.Timeout | undefined;
                  const r = await Promise.race([
                    request,
                    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in 60 s to ${JSON.stringify(op)}`)), 60_000))),
                  ]).finally(() => clearTimeout(timer));
                  // Every answer is one a user can act on: paid, refused for money, a key conflict, or still in progress.
                  expect([200, 402, 409], JSON.stringify(r.body)).toContain(r.status);
                }),
              );
              const chain = paidToTreasury(s.devnet, core.treasuryAddress);
              for (const u of users) expect(await walletCredits(u.id), `account ${u.id}`).toBe(chain.get(u.wallet) ?? 0n);
            }
            expect((await core.ledger.verify()).mismatches).toEqual([]);
          },
        ),
        { numRuns: 8, endOnFailure: true },
      );
      // The chain audit of every wallet-backed credit agrees, as an operator sees it.
      const op = await s.user();
      await grantOperator(core.db, op.id, 'cli:test');
      const report = await op.api('/v1/operator/reconciliation');
      const claimed = Number((await core.db.query<{ n: string }>('SELECT count(*) AS n FROM wallet_credits')).rows[0]!.n);
      expect(report.status).toBe(200);
      expect(report.body.wallet_credits).toMatchObject({ complete: true, problems: [] });
      expect(report.body.wallet_credits.checked).toBe(claimed);
      expect(claimed).toBeGreaterThan(0);
      expect(report.body.ledger).toEqual({ ok: true, mismatches: [] });
    }, 600_000);
  });
}
