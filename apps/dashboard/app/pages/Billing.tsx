import { useRef, useState, type FormEvent } from 'react';
import { errorMessage, gw, newIdempotencyKey, statusOf, type Account, type Topup } from '../gateway.js';
import { checkTopup, CREDITS_CAP_USD, TOPUP_MAX_USD } from '../format.js';
import { CopyButton, ErrorBox, ExplorerLink, Loading, Notice, Stat, Units, useEvery, useLoad } from '../ui.js';

const WALLET_STATUS: Record<string, string> = {
  provisioning:
    'Your wallet is being set up on the settlement network (account and USDC trustline). Wait until this note is gone before sending USDC to it; it takes a few seconds.',
  unavailable: 'The settlement network did not answer; the wallet balance shown may be out of date.',
};

/** The wallet to fund in the gateway's 402 message (`... issuer G... ) to G...; no memo needed`). */
const FUND_ADDRESS = /\bto (G[A-Z2-7]{55})\b/;

interface TopupError {
  message: string;
  /** Not enough USDC in the wallet: the address to send USDC to. */
  fund?: string;
}

export function BillingPage({ me }: { me: Account }) {
  const balance = useLoad(() => gw.balance());
  const wallet = useLoad(() => gw.wallet());
  const platform = useLoad(() => gw.platform.key());
  const paid = platform.data?.topups === 'wallet';
  const address = wallet.data?.pubkey ?? me.custodial_wallet;
  const [amount, setAmount] = useState('');
  const [error, setError] = useState<TopupError>();
  const [done, setDone] = useState<{ text: string; topup?: Topup }>();
  // The amount on its way (shown while the request runs).
  const [paying, setPaying] = useState<number>();
  // The last top-up got no clear answer: paying again with the same amount finds out (same key).
  const [unsure, setUnsure] = useState(false);
  // One Idempotency-Key per intended top-up: a retry of the same amount after an error reuses it, so it never pays twice.
  const attempt = useRef<{ amount: number; key: string } | undefined>(undefined);
  // A double click sends one request.
  const inFlight = useRef(false);

  // A wallet still being set up is asked about again until it is ready.
  const provisioning = wallet.data?.status === 'provisioning';
  useEvery(2000, () => {
    if (!provisioning) return;
    wallet.reload();
    balance.reload();
  });

  const topup = async (e: FormEvent) => {
    e.preventDefault();
    if (inFlight.current) return;
    setError(undefined);
    setDone(undefined);
    const checked = checkTopup(amount, balance.data?.balance_usd);
    if ('error' in checked) return setError({ message: checked.error });
    if (attempt.current?.amount !== checked.amount) attempt.current = { amount: checked.amount, key: newIdempotencyKey() };
    const key = attempt.current.key;
    inFlight.current = true;
    setPaying(checked.amount);
    try {
      const r = await gw.topup(checked.amount, { idempotencyKey: key });
      attempt.current = undefined;
      setUnsure(false);
      setDone(
        r.topup.paid_with === 'wallet'
          ? { text: `Paid ${r.topup.amount_usd} USDC from your wallet: added $${r.topup.amount_usd} to your credits.`, topup: r.topup }
          : { text: `Added $${checked.amount} to your credits. These are free test credits: nothing was paid.` },
      );
      setAmount('');
    } catch (err) {
      const status = statusOf(err);
      const message = errorMessage(err);
      // A refusal the gateway recorded under this key (nothing was charged): trying again is a new top-up, with a new key.
      const settled = /nothing was charged/.test(message);
      if (settled) attempt.current = undefined;
      // No answer, or paid and not confirmed yet: the same key finds out what happened without paying twice.
      setUnsure(paid && !settled && (status === 0 || (status >= 500 && status !== 503) || (status === 409 && /in progress/.test(message))));
      setError({ message, ...(status === 402 ? { fund: FUND_ADDRESS.exec(message)?.[1] ?? address } : {}) });
    } finally {
      inFlight.current = false;
      setPaying(undefined);
      balance.reload();
      wallet.reload();
    }
  };

  const busy = paying !== undefined;
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
              {paid && provisioning ? ' Top-ups open once your wallet is set up.' : ''}
            </p>
            {busy && paid ? (
              <Loading label={`Paying ${paying} USDC from your wallet… waiting for Stellar to confirm the payment (usually a few seconds).`} />
            ) : null}
            {error?.fund ? (
              <div className="error" role="alert">
                <div>{error.message}</div>
                <div className="field-label">Send USDC to your wallet</div>
                <div className="address-row">
                  <code className="address" data-testid="fund-address">
                    {error.fund}
                  </code>
                  <CopyButton text={error.fund} label="Copy wallet address" />
                </div>
                <p className="small-text">Once it has arrived (the wallet balance on this page shows it), pay again.</p>
              </div>
            ) : (
              <ErrorBox error={error?.message} />
            )}
            {unsure ? (
              <Notice>
                This payment may still be on its way. Press “Pay from wallet” again with the same amount to find out: the same top-up is checked, never paid
                twice.
              </Notice>
            ) : null}
            {done ? (
              <Notice>
                {done.text} {done.topup ? <ExplorerLink href={done.topup.explorer_url} label="Payment on explorer" /> : null}
              </Notice>
            ) : null}
          </form>
        </section>
        <section className="card" aria-labelledby="wallet-title">
          <h2 id="wallet-title">Wallet</h2>
          <p className="muted">
            {paid
              ? 'Your own USDC account on the settlement network. Top-ups are paid from it: send USDC to this address (no memo needed), then top up. Publishers are paid here too.'
              : 'Your own USDC account on the settlement network. Funding it does not add credits; publishers are paid here.'}
          </p>
          {wallet.loading && !wallet.data ? <Loading label="Loading wallet…" /> : null}
          <ErrorBox title="Wallet unavailable" error={wallet.error} />
          <div className="field-label">Address</div>
          <div className="address-row">
            <code className="address" data-testid="wallet-address">
              {address}
            </code>
            <CopyButton text={address} label="Copy address" />
          </div>
          {wallet.data ? (
            <>
              {paid && wallet.data.asset_issuer ? (
                <p className="small-text muted">
                  USDC issued by <code>{wallet.data.asset_issuer}</code>
                  {platform.data ? ` on ${platform.data.network}` : ''}.
                </p>
              ) : null}
              <div className="stats">
                <Stat label="On-chain balance" hint={wallet.data.asset}>
                  <span data-testid="wallet-balance">
                    <Units units={wallet.data.base_units} />
                  </span>
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
