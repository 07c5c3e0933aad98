import { useEffect, useRef, useState, type FormEvent } from 'react';
import { api, errorMessage, newIdempotencyKey, type Account, type Balance, type PlatformInfo, type Topup, type TopupResult, type Wallet } from '../api.js';
import { checkTopup, CREDITS_CAP_USD, TOPUP_MAX_USD } from '../format.js';
import { CopyButton, ErrorBox, ExplorerLink, Loading, Notice, Stat, Units, useLoad } from '../ui.js';

const WALLET_STATUS: Record<string, string> = {
  provisioning: 'Your wallet is being set up on the settlement network (account and USDC trustline). Wait until this note is gone before sending USDC to it; it takes a few seconds.',
  unavailable: 'The settlement network did not answer; the wallet balance shown may be out of date.',
};

export function BillingPage({ me }: { me: Account }) {
  const balance = useLoad(() => api<Balance>('/v1/balance'));
  const wallet = useLoad(() => api<Wallet>('/v1/wallet'));
  const platform = useLoad(() => api<PlatformInfo>('/v1/platform/key'));
  const paid = platform.data?.topups === 'wallet';
  const [amount, setAmount] = useState('');
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<{ text: string; topup?: Topup }>();
  const [busy, setBusy] = useState(false);
  // One Idempotency-Key per intended top-up: a retry of the same amount after an error reuses it, so it never pays twice.
  const attempt = useRef<{ amount: number; key: string } | undefined>(undefined);

  // A wallet still being set up is asked about again until it is ready.
  const provisioning = wallet.data?.status === 'provisioning';
  useEffect(() => {
    if (!provisioning) return;
    const t = setInterval(() => {
      wallet.reload();
      balance.reload();
    }, 2000);
    return () => clearInterval(t);
  }, [provisioning]);

  const topup = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setDone(undefined);
    const checked = checkTopup(amount, balance.data?.balance_usd);
    if ('error' in checked) return setError(checked.error);
    if (attempt.current?.amount !== checked.amount) attempt.current = { amount: checked.amount, key: newIdempotencyKey() };
    setBusy(true);
    try {
      const r = await api<TopupResult>('/v1/topup', { body: { amount: checked.amount }, headers: { 'idempotency-key': attempt.current.key } });
      attempt.current = undefined;
      setDone(
        r.topup.paid_with === 'wallet'
          ? { text: `Paid ${r.topup.amount_usd} USDC from your wallet: added $${r.topup.amount_usd} to your credits.`, topup: r.topup }
          : { text: `Added $${checked.amount} to your credits.` },
      );
      setAmount('');
      balance.reload();
      wallet.reload();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="billing-title">
      <h1 id="billing-title">Billing</h1>
      <div className="grid two">
        <section className="card" aria-labelledby="credits-title">
          <h2 id="credits-title">Credits</h2>
          {balance.loading && !balance.data ? <Loading label="Loading balance…" /> : null}
          <ErrorBox title="Balance unavailable" error={balance.error} />
          {balance.data ? (
            <div className="stats">
              <Stat label="Credits" hint="Spent first, off-chain and instantly">
                <span data-testid="credits">
                  <Units units={balance.data.balance_base_units} />
                </span>
              </Stat>
              <Stat label="Total" hint="Credits plus wallet">
                <Units units={balance.data.total_base_units} />
              </Stat>
            </div>
          ) : null}
          <form onSubmit={topup} className="inline-form" noValidate>
            <label htmlFor="topup-amount">Top up (USD)</label>
            <div className="row">
              <input
                id="topup-amount"
                type="number"
                inputMode="decimal"
                min="0"
                max={TOPUP_MAX_USD}
                step="any"
                placeholder="25"
                aria-describedby="topup-hint"
                value={amount}
                onChange={(e) => setAmount(e.target.value)}
              />
              <button type="submit" disabled={busy || (paid && provisioning)}>
                {busy ? (paid ? 'Paying…' : 'Adding…') : paid ? 'Pay from wallet' : 'Add credits'}
              </button>
            </div>
            <p id="topup-hint" className="hint">
              {paid
                ? `Paid in USDC from your wallet below (${wallet.data ? `${wallet.data.asset_amount} USDC there` : 'its balance is loading'}) to the platform on the settlement network, and credited once the network confirms it. `
                : platform.data
                  ? 'Free test credits on this network: nothing is paid. '
                  : ''}
              More than $0 and at most ${TOPUP_MAX_USD.toLocaleString('en-US')} per top-up; credits are capped at ${CREDITS_CAP_USD.toLocaleString('en-US')}.
            </p>
            {busy && paid ? <Notice>Paying {amount} USDC from your wallet… waiting for the settlement network to confirm the payment (a few seconds).</Notice> : null}
            <ErrorBox error={error} />
            {done ? (
              <Notice>
                {done.text} {done.topup ? <ExplorerLink href={done.topup.explorer_url} label="Payment on explorer" /> : null}
              </Notice>
            ) : null}
          </form>
        </section>
        <section className="card" aria-labelledby="wallet-title">
          <h2 id="wallet-title">Wallet</h2>
          <p className="muted">Your own USDC account on the settlement network. Funding it does not add credits; publishers are paid here.</p>
          {wallet.loading && !wallet.data ? <Loading label="Loading wallet…" /> : null}
          <ErrorBox title="Wallet unavailable" error={wallet.error} />
          <div className="field-label">Address</div>
          <div className="address-row">
            <code className="address" data-testid="wallet-address">
              {wallet.data?.pubkey ?? me.custodial_wallet}
            </code>
            <CopyButton text={wallet.data?.pubkey ?? me.custodial_wallet} label="Copy address" />
          </div>
          {wallet.data ? (
            <>
              <div className="stats">
                <Stat label="On-chain balance" hint={wallet.data.asset}>
                  <Units units={wallet.data.base_units} />
                </Stat>
              </div>
              {wallet.data.status && WALLET_STATUS[wallet.data.status] ? <Notice>{WALLET_STATUS[wallet.data.status]}</Notice> : null}
              <ExplorerLink href={wallet.data.explorer_url} label="Wallet on explorer" />
            </>
          ) : null}
        </section>
      </div>
    </section>
  );
}
