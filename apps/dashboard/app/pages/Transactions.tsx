import { gw, type Transaction } from '../gateway.js';
import { formatDate, shorten } from '../format.js';
import { Badge, Empty, ErrorBox, ExplorerLink, Loading, Units, useEvery, useLoad } from '../ui.js';

/** What kind of credit a top-up row is. */
function topupKind(t: Transaction): string {
  if (t.note === 'signup') return 'Sign-up credit';
  if (t.paid_with === 'wallet') return 'Top-up from wallet';
  if (t.note?.startsWith('free')) return 'Free top-up';
  return 'Top-up';
}

/** The On chain cell: the payment's explorer link, a top-up still on its way, or why it failed. */
function OnChain({ t }: { t: Transaction }) {
  if (t.explorer_url) return <ExplorerLink href={t.explorer_url} label={t.tx_signature ? shorten(t.tx_signature) : 'Explorer'} />;
  if (t.type === 'topup' && t.status === 'pending') {
    return (
      <span className="small-text">
        Waiting for the network to confirm
        {t.tx_signature ? (
          <>
            {' '}
            payment <code title={t.tx_signature}>{shorten(t.tx_signature)}</code>
          </>
        ) : null}
        ; credited once it does
      </span>
    );
  }
  if (t.type === 'topup' && t.status === 'failed') return <span className="small-text">{t.note ?? 'not applied'}; nothing was charged</span>;
  return <span className="muted">{t.type === 'call' && t.status === 'completed' ? 'in the next settlement' : '—'}</span>;
}

export function TransactionsPage() {
  const txs = useLoad(() => gw.transactions({ limit: 100 }));
  // A top-up on its way is followed until the network has it.
  useEvery(3000, () => {
    if (txs.data?.some((t) => t.type === 'topup' && t.status === 'pending')) txs.reload();
  });
  return (
    <section aria-labelledby="tx-title">
      <div className="title-row">
        <h1 id="tx-title">Transactions</h1>
        <button type="button" className="secondary small" onClick={txs.reload} disabled={txs.loading}>
          Refresh
        </button>
      </div>
      <p className="muted">Top-ups and calls, newest first.</p>
      <ErrorBox title="Transactions unavailable" error={txs.error} />
      {txs.loading && !txs.data ? <Loading label="Loading transactions…" /> : null}
      {txs.data && txs.data.length === 0 ? <Empty>No transactions yet. Top up or call a service from the catalog.</Empty> : null}
      {txs.data && txs.data.length > 0 ? (
        <div className="table-wrap card flush">
          <table>
            <caption className="visually-hidden">Transactions, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Type</th>
                <th scope="col">Service</th>
                <th scope="col" className="num">
                  Amount
                </th>
                <th scope="col">Status</th>
                <th scope="col">On chain</th>
              </tr>
            </thead>
            <tbody>
              {txs.data.map((t) => (
                <tr key={t.id}>
                  <td data-label="When">{formatDate(t.created_at)}</td>
                  <td data-label="Type">{t.type === 'topup' ? topupKind(t) : 'Call'}</td>
                  <td data-label="Service" className="clip" title={t.service ?? undefined}>
                    {t.service ? <span>{t.service}</span> : <span className="muted">—</span>}
                  </td>
                  <td data-label="Amount" className={`num ${t.type === 'topup' ? (t.status === 'completed' ? 'plus' : '') : 'minus'}`}>
                    <span>
                      {t.type === 'topup' ? (t.status === 'completed' ? '+' : '') : '−'}
                      <Units units={t.amount_base_units} />
                    </span>
                  </td>
                  <td data-label="Status">
                    <Badge status={t.status} />
                  </td>
                  <td data-label="On chain">
                    <OnChain t={t} />
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
