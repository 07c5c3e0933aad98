import { useState, type FormEvent } from 'react';
import { errorMessage, gw, type Account, type Service } from '../gateway.js';
import { serviceNameProblem, type UpdateServiceInput } from '@farebox/client/gateway';
import { formatBaseUnits, formatDate, formatUsd, parseUsdc, plural, shorten } from '../format.js';
import { Link } from '../router.js';
import { Badge, Empty, ErrorBox, ExplorerLink, Loading, Notice, Stat, Units, useEvery, useLoad } from '../ui.js';
import { EarningsChart } from '../Chart.js';
import { LinkedKeys } from './LinkedKeys.js';

export function PublisherPage({ me, onChanged }: { me: Account; onChanged: () => Promise<void> }) {
  if (!me.is_publisher) return <Activate onDone={onChanged} />;
  return <PublisherHome me={me} />;
}

function Activate({ onDone }: { onDone: () => Promise<void> }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    if (!name.trim()) return setError('enter the name callers will see');
    setBusy(true);
    try {
      await gw.publisher.activate(name.trim());
      await onDone();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="pub-title">
      <h1 id="pub-title">Publisher</h1>
      <div className="card narrow">
        <h2>Publish your own services</h2>
        <p className="muted">
          Register any HTTP service, set a price per call in USDC, and get paid to your wallet, 95 percent of each call (the platform fee is 5 percent).
        </p>
        <form onSubmit={submit} noValidate>
          <label htmlFor="pub-name">Publisher name</label>
          <input id="pub-name" placeholder="e.g. Acme Labs" value={name} onChange={(e) => setName(e.target.value)} />
          <ErrorBox error={error} />
          <button type="submit" disabled={busy}>
            {busy ? 'Activating…' : 'Become a publisher'}
          </button>
        </form>
      </div>
    </section>
  );
}

function PublisherHome({ me }: { me: Account }) {
  const overview = useLoad(() => gw.publisher.overview());
  const mine = useLoad(() => gw.agents.mine());
  const reloadAll = () => {
    overview.reload();
    mine.reload();
  };
  const o = overview.data;
  // A payout wallet still being set up is asked about again until it is ready.
  useEvery(2000, () => {
    if (o?.wallet_status === 'provisioning') overview.reload();
  });
  return (
    <section aria-labelledby="pub-title">
      <div className="title-row">
        <h1 id="pub-title">Publisher</h1>
        <span className="muted">{me.publisher_name}</span>
      </div>
      <section className="card" aria-labelledby="overview-title">
        <h2 id="overview-title">Overview</h2>
        <ErrorBox title="Overview unavailable" error={overview.error} />
        {overview.loading && !o ? <Loading label="Loading overview…" /> : null}
        {o ? (
          <>
            <div className="stats">
              <Stat label="Earned" hint={`net of the ${o.fee.pct}% fee`}>
                <span data-testid="earned">
                  <Units units={o.earned_base_units} />
                </span>
              </Stat>
              <Stat label="Pending" hint="not paid out yet">
                <Units units={o.pending_base_units} />
              </Stat>
              <Stat label="Settled" hint="paid to your wallet">
                <Units units={o.settled_base_units} />
              </Stat>
              <Stat label="Calls">{o.calls.toLocaleString('en-US')}</Stat>
              <Stat label="Wallet" hint="on-chain USDC">
                <Units units={o.wallet_base_units} />
              </Stat>
            </div>
            <p className="small-text muted">
              Payouts go to <code data-testid="payout-wallet">{o.payout_wallet}</code>.
            </p>
            {o.wallet_status === 'provisioning' ? (
              <Notice>
                This wallet is still being set up on the settlement network (account and USDC trustline): wait until this note is gone before sending USDC to
                it; it takes a few seconds.
              </Notice>
            ) : null}
          </>
        ) : null}
      </section>
      <Analytics />
      <MyServices services={mine.data} loading={mine.loading} error={mine.error} onChanged={reloadAll} wallet={me.custodial_wallet} />
      <LinkedKeys owners={o?.linked_owners ?? []} services={o?.services ?? []} onLinked={reloadAll} />
      <Settlements />
    </section>
  );
}

function Analytics() {
  const [daysText, setDaysText] = useState('30');
  const [days, setDays] = useState(30);
  const [inputError, setInputError] = useState<string>();
  const points = useLoad(() => gw.publisher.analytics({ days }), [days]);
  const apply = (text: string) => {
    setDaysText(text);
    const n = Number(text);
    if (!/^\d+$/.test(text) || n < 1 || n > 90) return setInputError('choose 1 to 90 days');
    setInputError(undefined);
    setDays(n);
  };
  const total = points.data?.reduce((a, p) => a + BigInt(p.earned_base_units), 0n) ?? 0n;
  const calls = points.data?.reduce((a, p) => a + p.calls, 0) ?? 0;
  return (
    <section className="card" aria-labelledby="analytics-title">
      <div className="title-row">
        <h2 id="analytics-title">Earnings</h2>
        <div className="range">
          {[7, 30, 90].map((n) => (
            <button key={n} type="button" className={`small ${days === n ? '' : 'secondary'}`} aria-pressed={days === n} onClick={() => apply(String(n))}>
              {n} days
            </button>
          ))}
          <label htmlFor="analytics-days" className="small-text">
            Days
          </label>
          <input
            id="analytics-days"
            className="days"
            type="number"
            min={1}
            max={90}
            value={daysText}
            onChange={(e) => apply(e.target.value)}
            aria-invalid={inputError ? true : undefined}
          />
        </div>
      </div>
      <ErrorBox error={inputError} />
      <ErrorBox title="Analytics unavailable" error={points.error} />
      {points.loading && !points.data ? <Loading label="Loading analytics…" /> : null}
      {points.data ? (
        <>
          <p className="small-text muted" data-testid="analytics-summary">
            {formatBaseUnits(total)} net from {calls.toLocaleString('en-US')} {calls === 1 ? 'call' : 'calls'} over {points.data.length}{' '}
            {points.data.length === 1 ? 'day' : 'days'} (net of the fee).
          </p>
          <EarningsChart points={points.data} />
        </>
      ) : null}
    </section>
  );
}

interface Draft {
  service: string;
  price: string;
  endpoint: string;
  description: string;
}

function ServiceForm({
  initial,
  editing,
  onSubmit,
  onCancel,
  busy,
}: {
  initial: Draft;
  editing: boolean;
  onSubmit: (d: Draft) => void;
  onCancel?: () => void;
  busy: boolean;
}) {
  const [d, setD] = useState(initial);
  const id = editing ? `edit-${initial.service}` : 'new';
  const set = (k: keyof Draft) => (e: { target: { value: string } }) => setD({ ...d, [k]: e.target.value });
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit(d);
      }}
      className="service-form"
      noValidate
    >
      <div className="grid two">
        <div>
          <label htmlFor={`${id}-service`}>Service name</label>
          <input
            id={`${id}-service`}
            maxLength={32}
            autoCapitalize="none"
            spellCheck={false}
            value={d.service}
            onChange={set('service')}
            readOnly={editing}
            aria-describedby={`${id}-service-hint`}
          />
          <p id={`${id}-service-hint`} className="hint">
            {editing ? 'Names cannot change.' : 'Lower-case letters, digits and single hyphens, 1 to 32 (like npm names), unique across the registry.'}
          </p>
        </div>
        <div>
          <label htmlFor={`${id}-price`}>Price per call (USDC)</label>
          <input id={`${id}-price`} inputMode="decimal" placeholder="0.01" value={d.price} onChange={set('price')} aria-describedby={`${id}-price-hint`} />
          <p id={`${id}-price-hint`} className="hint">
            Up to 7 decimals. You receive 95 percent.
          </p>
        </div>
      </div>
      <label htmlFor={`${id}-endpoint`}>Endpoint URL</label>
      <input id={`${id}-endpoint`} type="url" placeholder="https://api.example.com/translate" value={d.endpoint} onChange={set('endpoint')} />
      <label htmlFor={`${id}-description`}>Description</label>
      <textarea id={`${id}-description`} rows={3} placeholder="What it does and which payload to send" value={d.description} onChange={set('description')} />
      <div className="row">
        <button type="submit" disabled={busy}>
          {busy ? 'Signing on chain…' : editing ? 'Save changes' : 'Register service'}
        </button>
        {onCancel ? (
          <button type="button" className="secondary" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

function MyServices({
  services,
  loading,
  error,
  onChanged,
  wallet,
}: {
  services: Service[] | undefined;
  loading: boolean;
  error: string | undefined;
  onChanged: () => void;
  wallet: string;
}) {
  const [formError, setFormError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [editing, setEditing] = useState<string>();
  const [formKey, setFormKey] = useState(0);

  const run = async (action: () => Promise<string>) => {
    setFormError(undefined);
    setNotice(undefined);
    setBusy(true);
    try {
      setNotice(await action());
      onChanged();
      return true;
    } catch (err) {
      setFormError(errorMessage(err));
      return false;
    } finally {
      setBusy(false);
    }
  };

  const register = async (d: Draft) => {
    const price = parseUsdc(d.price);
    if ('error' in price) return setFormError(`Price: ${price.error}`);
    // The gateway's name policy (@farebox/protocol), checked before anything is signed.
    const service = d.service.trim();
    const nameProblem = serviceNameProblem(service);
    if (nameProblem) return setFormError(`Service name: ${nameProblem}`);
    const ok = await run(async () => {
      await gw.agents.register({ service, pricePerCallLamports: Number(price.units), endpoint: d.endpoint.trim(), description: d.description });
      return `Registered ${service}.`;
    });
    if (ok) setFormKey((k) => k + 1);
  };

  const update = async (s: Service, d: Draft) => {
    const price = parseUsdc(d.price);
    if ('error' in price) return setFormError(`Price: ${price.error}`);
    const body: UpdateServiceInput = {};
    if (Number(price.units) !== (s.pricePerCallBaseUnits ?? Math.round(s.pricePerCall * 1e7))) body.pricePerCallLamports = Number(price.units);
    if (d.endpoint.trim() !== s.endpoint) body.endpoint = d.endpoint.trim();
    if (d.description !== s.description) body.description = d.description;
    if (Object.keys(body).length === 0) return setEditing(undefined);
    const ok = await run(async () => {
      await gw.agents.update(s.service, body);
      return `Saved ${s.service}.`;
    });
    if (ok) setEditing(undefined);
  };

  const remove = async (s: Service) => {
    if (!window.confirm(`Remove ${s.service} from the registry? Callers can no longer find or call it.`)) return;
    await run(async () => {
      await gw.agents.remove(s.service);
      return `Removed ${s.service}.`;
    });
  };

  const priceText = (s: Service) =>
    formatBaseUnits(s.pricePerCallBaseUnits ?? Math.round(s.pricePerCall * 1e7))
      .slice(1)
      .replace(/,/g, '');

  return (
    <section className="card" aria-labelledby="mine-title">
      <h2 id="mine-title">Your services</h2>
      <ErrorBox title="Services unavailable" error={error} />
      {loading && !services ? <Loading label="Loading your services…" /> : null}
      {services && services.length === 0 ? <Empty>You have not registered a service from the dashboard yet.</Empty> : null}
      {services && services.length > 0 ? (
        <ul className="mine">
          {services.map((s) => (
            <li key={s.service} className="mine-item">
              {editing === s.service ? (
                <ServiceForm
                  initial={{ service: s.service, price: priceText(s), endpoint: s.endpoint, description: s.description }}
                  editing
                  busy={busy}
                  onSubmit={(d) => update(s, d)}
                  onCancel={() => setEditing(undefined)}
                />
              ) : (
                <>
                  <div className="service-head">
                    <h3>
                      <Link href={`/catalog/${encodeURIComponent(s.service)}`}>{s.service}</Link>
                    </h3>
                    <span className="price">{formatUsd(s.pricePerCall)} / call</span>
                  </div>
                  <p className="desc">{s.description}</p>
                  <div className="small-text muted">
                    {plural(s.totalCalls, 'call')} · <code>{s.endpoint}</code>
                  </div>
                  <div className="row">
                    <button type="button" className="secondary small" onClick={() => setEditing(s.service)} aria-label={`Edit ${s.service}`}>
                      Edit
                    </button>
                    <button type="button" className="danger small" onClick={() => remove(s)} disabled={busy} aria-label={`Remove ${s.service}`}>
                      Remove
                    </button>
                  </div>
                </>
              )}
            </li>
          ))}
        </ul>
      ) : null}
      <ErrorBox error={formError} />
      {notice ? <Notice>{notice}</Notice> : null}
      <h3>Register a service</h3>
      <p className="small-text muted">
        Signed by your wallet <code title={wallet}>{shorten(wallet)}</code>, which owns the entry and receives the earnings. The endpoint must serve{' '}
        <code>/manifest</code> naming this wallet as owner.
      </p>
      <ServiceForm key={formKey} initial={{ service: '', price: '', endpoint: '', description: '' }} editing={false} busy={busy} onSubmit={register} />
    </section>
  );
}

function Settlements() {
  const list = useLoad(() => gw.publisher.settlements({ limit: 50 }));
  const [note, setNote] = useState<string>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const settleNow = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const r = await gw.publisher.settle();
      setNote(r.settled ? `Paid out ${plural(r.settlements?.length ?? 1, 'cycle')} now.` : (r.message ?? 'Nothing to settle.'));
      list.reload();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="card" aria-labelledby="settle-title">
      <div className="title-row">
        <h2 id="settle-title">Settlements</h2>
        <button type="button" className="small" disabled={busy} onClick={settleNow}>
          {busy ? 'Settling…' : 'Settle now'}
        </button>
      </div>
      <p className="muted small-text">
        Earnings are funded into one escrow per cycle and released to your wallet in batches, with the platform fee applied at release.
      </p>
      {note ? <Notice>{note}</Notice> : null}
      <ErrorBox error={error} />
      <ErrorBox title="Settlements unavailable" error={list.error} />
      {list.loading && !list.data ? <Loading label="Loading settlements…" /> : null}
      {list.data && list.data.length === 0 ? <Empty>No settlement yet: your first cycle opens with your first paid call.</Empty> : null}
      {list.data && list.data.length > 0 ? (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Settlement cycles</caption>
            <thead>
              <tr>
                <th scope="col">Opened</th>
                <th scope="col">State</th>
                <th scope="col" className="num">
                  Calls
                </th>
                <th scope="col" className="num">
                  Net
                </th>
                <th scope="col" className="num">
                  Fee
                </th>
                <th scope="col">Transactions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((s) => (
                <tr key={s.id}>
                  <td data-label="Opened">{formatDate(s.opened_at)}</td>
                  <td data-label="State">
                    <Badge status={s.state} />
                  </td>
                  <td data-label="Calls" className="num">
                    {s.calls}
                  </td>
                  <td data-label="Net" className="num">
                    <Units units={s.net.lamports} />
                  </td>
                  <td data-label="Fee" className="num">
                    <Units units={s.fee.lamports} /> ({s.fee.pct}%)
                  </td>
                  <td data-label="Transactions">
                    {s.transactions.length === 0 ? (
                      <span className="muted">—</span>
                    ) : (
                      <ul className="tx-links">
                        {s.transactions.map((t) => (
                          <li key={`${t.step}-${t.tx_hash}`}>
                            <ExplorerLink href={t.explorer_url} label={`${t.step} ${shorten(t.tx_hash)}`} />
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
