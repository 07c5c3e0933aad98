import './operator.css';
import { useState, type FormEvent } from 'react';
import type { DisputeDecision, GatewayDispute, GatewayTreasury } from '@farebox/client/gateway';
import { errorMessage, gw } from '../gateway.js';
import { formatDate, parseUsdc, shorten } from '../format.js';
import { Badge, Empty, ErrorBox, ExplorerLink, Loading, Notice, Stat, Units, useEvery, useLoad } from '../ui.js';

type Money = GatewayTreasury['balance'];
type DisputeRow = GatewayDispute;

/** An exact amount: every base unit shown (operators reconcile against the chain). */
function Exact({ m, id }: { m: Money; id?: string }) {
  return (
    <span className="amount" title={`${m.base_units} base units`} {...(id ? { 'data-testid': id } : {})}>
      {m.usdc} USDC
    </span>
  );
}

/** The operator section: disputes, treasury, settlements, revenue and the audit log. */
/** How often the treasury and the open disputes refresh on their own (disputes are opened by callers, not here). */
const POLL_MS = 10_000;

export function OperatorPage() {
  const who = useLoad(() => gw.operator.whoami());
  // A resolution here changes the treasury and the audit log too.
  const [changes, setChanges] = useState(0);
  const changed = () => setChanges((c) => c + 1);
  if (who.loading && !who.data) return <Loading />;
  if (who.error) return <ErrorBox title="Operator tools unavailable" error={who.error} />;
  if (!who.data?.operator)
    return (
      <section aria-labelledby="op-title">
        <h1 id="op-title">Operator</h1>
        <Notice>
          This account is not an operator. Operators are granted by the gateway's configuration (FAREBOX_OPERATORS) or with `farebox operator grant`.
        </Notice>
      </section>
    );
  return (
    <section aria-labelledby="op-title">
      <h1 id="op-title">Operator</h1>
      <p className="muted">
        Disputes on direct escrows, the treasury against what it owes, settlement health and revenue. Every action is written to the audit log.
      </p>
      <TreasuryPanel changes={changes} />
      <DisputesPanel onChanged={changed} />
      <SettlementsPanel />
      <RevenuePanel />
      <AuditPanel changes={changes} />
    </section>
  );
}

function TreasuryPanel({ changes }: { changes: number }) {
  const t = useLoad(() => gw.operator.treasury(), [changes]);
  useEvery(POLL_MS, t.reload);
  return (
    <section aria-labelledby="op-treasury" className="card">
      <div className="title-row">
        <h2 id="op-treasury">Treasury</h2>
        <button type="button" className="secondary small" onClick={t.reload} disabled={t.loading}>
          Refresh
        </button>
      </div>
      <ErrorBox title="Treasury unavailable" error={t.error} />
      {t.data ? (
        <>
          <div className="stats op-exact">
            <Stat label="On chain" hint="USDC the treasury holds">
              <Exact m={t.data.balance} id="treasury-balance" />
            </Stat>
            <Stat label="Owed to publishers" hint="net of unsettled earnings">
              <Exact m={t.data.owed_to_publishers} id="treasury-owed" />
            </Stat>
            <Stat label="Still to fund" hint="earnings not yet in an escrow">
              <Exact m={t.data.to_fund} id="treasury-to-fund" />
            </Stat>
            <Stat label="In escrows" hint={`on chain: ${t.data.escrows_on_chain.usdc}`}>
              <Exact m={t.data.in_escrows} id="treasury-in-escrows" />
            </Stat>
            <Stat label="Surplus" hint={t.data.covered ? 'covers what is still to fund' : 'short of what is still to fund'}>
              <Exact m={t.data.surplus} id="treasury-surplus" />
            </Stat>
            <Stat label="Open disputes" hint={`${t.data.open_disputes.count} escrow(s)`}>
              <Exact m={t.data.open_disputes} id="treasury-disputes" />
            </Stat>
          </div>
          <p className="muted">
            Treasury <code>{shorten(t.data.address)}</code> <ExplorerLink href={t.data.explorer_url} />
          </p>
        </>
      ) : t.loading ? (
        <Loading label="Reading the chain…" />
      ) : null}
    </section>
  );
}

function ResolveForm({ d, onDone }: { d: DisputeRow; onDone(): void }) {
  const [payer, setPayer] = useState('');
  const [receiver, setReceiver] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const send = async (body: DisputeDecision) => {
    setBusy(true);
    setError(undefined);
    try {
      await gw.operator.resolveDispute(d.escrow_id, body);
      onDone();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  const split = (e: FormEvent) => {
    e.preventDefault();
    const p = parseUsdc(payer);
    const r = parseUsdc(receiver);
    if ('error' in p) return setError(`payer share: ${p.error}`);
    if ('error' in r) return setError(`receiver share: ${r.error}`);
    void send({ action: 'split', payer_base_units: p.units.toString(), receiver_base_units: r.units.toString() });
  };
  return (
    <div className="resolve">
      <button type="button" onClick={() => void send({ action: 'refund' })} disabled={busy} aria-label={`Refund escrow ${d.escrow_id} in full`}>
        Refund in full
      </button>
      <form onSubmit={split} className="inline" aria-label={`Split escrow ${d.escrow_id}`}>
        <label>
          Payer (USDC)
          <input value={payer} onChange={(e) => setPayer(e.target.value)} inputMode="decimal" size={8} />
        </label>
        <label>
          Receiver (USDC)
          <input value={receiver} onChange={(e) => setReceiver(e.target.value)} inputMode="decimal" size={8} />
        </label>
        <button type="submit" className="secondary" disabled={busy}>
          Split
        </button>
      </form>
      <ErrorBox title="Not resolved" error={error} />
    </div>
  );
}

function DisputesPanel({ onChanged }: { onChanged(): void }) {
  const [state, setState] = useState<'open' | 'all'>('open');
  const list = useLoad(() => gw.operator.disputes({ state }), [state]);
  useEvery(POLL_MS, list.reload);
  const resolved = () => {
    list.reload();
    onChanged();
  };
  return (
    <section aria-labelledby="op-disputes" className="card">
      <div className="title-row">
        <h2 id="op-disputes">Disputes</h2>
        <label>
          Show{' '}
          <select value={state} onChange={(e) => setState(e.target.value === 'all' ? 'all' : 'open')}>
            <option value="open">open</option>
            <option value="all">all</option>
          </select>
        </label>
      </div>
      <ErrorBox title="Disputes unavailable" error={list.error} />
      {list.loading && !list.data ? <Loading /> : null}
      {list.data && list.data.length === 0 ? <Empty>No {state === 'open' ? 'open ' : ''}disputes.</Empty> : null}
      {list.data && list.data.length > 0 ? (
        <ul className="disputes">
          {list.data.map((d) => (
            <li key={d.escrow_id} className="dispute" data-escrow={d.escrow_id}>
              <div>
                <span className={`badge badge-${d.state === 'open' ? 'warn' : 'ok'}`}>{d.state}</span> <Units units={d.amount_base_units} /> · escrow{' '}
                <code>{shorten(d.escrow_id)}</code> <ExplorerLink href={d.escrow_explorer_url} label="escrow" />
              </div>
              <div className="muted">
                Opened {formatDate(d.opened_at)} by <code>{shorten(d.requested_by)}</code> · service {d.served ? 'marked it served' : 'never served'}
                {d.reason ? ` · “${d.reason}”` : ''}
              </div>
              {d.error ? <div className="muted">Last problem: {d.error}</div> : null}
              {d.state === 'open' ? (
                <ResolveForm d={d} onDone={resolved} />
              ) : (
                <div>
                  Resolved ({d.resolution}) by {d.resolved_by} <ExplorerLink href={d.resolve_explorer_url} label="resolution tx" />
                </div>
              )}
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}

function SettlementsPanel() {
  const cycles = useLoad(() => gw.operator.settlements({ limit: 20 }));
  const [note, setNote] = useState<string>();
  const retry = async (id: string) => {
    try {
      const r = await gw.operator.retrySettlement(id);
      setNote(`cycle ${id}: ${r.from} → ${r.state}${r.error ? ` (${r.error})` : ''}`);
    } catch (err) {
      setNote(`cycle ${id}: ${errorMessage(err)}`);
    }
    cycles.reload();
  };
  return (
    <section aria-labelledby="op-settlements" className="card">
      <h2 id="op-settlements">Settlement cycles</h2>
      <ErrorBox title="Settlements unavailable" error={cycles.error} />
      {note ? <Notice>{note}</Notice> : null}
      {cycles.data && cycles.data.length === 0 ? <Empty>No settlement cycles yet.</Empty> : null}
      {cycles.data && cycles.data.length > 0 ? (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Cycle</th>
                <th scope="col">Publisher</th>
                <th scope="col">State</th>
                <th scope="col" className="num">
                  Calls
                </th>
                <th scope="col" className="num">
                  Gross
                </th>
                <th scope="col">Health</th>
              </tr>
            </thead>
            <tbody>
              {cycles.data.map((c) => (
                <tr key={c.id}>
                  <td data-label="Cycle">{c.id}</td>
                  <td data-label="Publisher">
                    <code>{shorten(c.publisher_owner)}</code>
                  </td>
                  <td data-label="State">
                    <Badge status={c.state === 'done' ? 'settled' : c.state} />
                  </td>
                  <td data-label="Calls" className="num">
                    {c.calls}
                  </td>
                  <td data-label="Gross" className="num">
                    <Units units={c.gross.base_units} />
                  </td>
                  <td data-label="Health">
                    {c.stalled ? (
                      <>
                        <Badge status="failed" /> {c.last_failure?.message ?? 'stalled'}{' '}
                        <button type="button" className="secondary small" onClick={() => void retry(c.id)}>
                          Retry
                        </button>
                      </>
                    ) : (
                      <span className="muted">ok</span>
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

function RevenuePanel() {
  const rev = useLoad(() => gw.operator.revenue({ days: 14 }));
  const max = rev.data ? rev.data.points.reduce((m, p) => (BigInt(p.revenue.base_units) > m ? BigInt(p.revenue.base_units) : m), 1n) : 1n;
  return (
    <section aria-labelledby="op-revenue" className="card">
      <h2 id="op-revenue">Platform revenue (14 days)</h2>
      <ErrorBox title="Revenue unavailable" error={rev.error} />
      {rev.data ? (
        <>
          <p>
            Total fees: <Units units={rev.data.total.base_units} />
          </p>
          <ol className="bars" aria-label="Revenue per day">
            {rev.data.points.map((p) => (
              <li key={p.day} title={`${p.day}: ${p.revenue.usdc} USDC from ${p.calls} calls`}>
                <span className="bar" style={{ height: `${Number((BigInt(p.revenue.base_units) * 100n) / max)}%` }} />
                <span className="visually-hidden">
                  {p.day}: {p.revenue.usdc} USDC
                </span>
              </li>
            ))}
          </ol>
        </>
      ) : null}
    </section>
  );
}

function AuditPanel({ changes }: { changes: number }) {
  const log = useLoad(() => gw.operator.audit({ limit: 20 }), [changes]);
  return (
    <section aria-labelledby="op-audit" className="card">
      <div className="title-row">
        <h2 id="op-audit">Audit log</h2>
        <button type="button" className="secondary small" onClick={log.reload} disabled={log.loading}>
          Refresh
        </button>
      </div>
      <ErrorBox title="Audit log unavailable" error={log.error} />
      {log.data && log.data.length === 0 ? <Empty>Nothing yet.</Empty> : null}
      {log.data && log.data.length > 0 ? (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
                <th scope="col">Target</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {log.data.map((e) => (
                <tr key={e.id}>
                  <td data-label="When">{formatDate(e.at)}</td>
                  <td data-label="Who" className="clip" title={e.actor}>
                    <span>{e.actor.startsWith('funder:') ? `funder ${shorten(e.actor.slice(7))}` : e.actor}</span>
                  </td>
                  <td data-label="What">{e.action}</td>
                  <td data-label="Target">{e.target ? <code>{shorten(e.target)}</code> : ''}</td>
                  <td data-label="Outcome">
                    <span className={`badge badge-${e.outcome === 'ok' ? 'ok' : e.outcome === 'denied' ? 'bad' : 'warn'}`}>{e.outcome}</span>
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
