import { useState, type FormEvent } from 'react';
import { api, errorMessage, newIdempotencyKey, type Account, type Balance, type Wallet } from '../api.js';
import { checkTopup, CREDITS_CAP_USD, TOPUP_MAX_USD } from '../format.js';
import { CopyButton, ErrorBox, ExplorerLink, Loading, Notice, Stat, Units, useLoad } from '../ui.js';

const WALLET_STATUS: Record<string, string> = {
  not_provisioned: 'The wallet is being set up (USDC trustline); its balance appears in a moment.',
  unavailable: 'The settlement network did not answer; the wallet balance shown may be out of date.',
};

export function BillingPage({ me }: { me: Account }) {
  const balance = useLoad(() => api<Balance>('/v1/balance'));
  const wallet = useLoad(() => api<Wallet>('/v1/wallet'));
  const [amount, setAmount] = useState('');
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);

  const topup = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setDone(undefined);
    const checked = checkTopup(amount, balance.data?.balance_usd);
    if ('error' in checked) return setError(checked.error);
    setBusy(true);
    try {
      await api<Balance>('/v1/topup', { body: { amount: checked.amount }, headers: { 'idempotency-key': newIdempotencyKey() } });
      setDone(`Added $${checked.amount} to your credits.`);
      setAmount('');
      balance.reload();
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
              <button type="submit" disabled={busy}>
                {busy ? 'Adding…' : 'Add credits'}
              </button>
            </div>
            <p id="topup-hint" className="hint">
              More than $0 and at most ${TOPUP_MAX_USD.toLocaleString('en-US')} per top-up; credits are capped at ${CREDITS_CAP_USD.toLocaleString('en-US')}.
            </p>
            <ErrorBox error={error} />
            {done ? <Notice>{done}</Notice> : null}
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
