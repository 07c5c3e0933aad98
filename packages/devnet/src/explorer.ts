import { scValToNative, StrKey, xdr } from '@stellar/stellar-sdk';
import type { Chain, TxRecord } from './core.js';
import { formatStroops } from './xdrutil.js';

const esc = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string, base: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)} · Farebox devnet explorer</title>
<style>body{font:14px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:960px;padding:0 1rem;color:#222}code,td{font-family:ui-monospace,monospace;word-break:break-all}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}.ok{color:#067d17}.bad{color:#b00020}</style></head>
<body><p><a href="${esc(base)}">Farebox devnet</a> · local network</p><h1>${esc(title)}</h1>${body}</body></html>`;
}

function link(base: string, kind: 'tx' | 'account' | 'contract', id: string, label = id): string {
  return `<a href="${esc(`${base}/${kind}/${id}`)}"><code>${esc(label)}</code></a>`;
}

function linkify(base: string, text: string): string {
  return esc(text).replace(/\b([GC][A-Z2-7]{55})\b/g, (m) =>
    StrKey.isValidContract(m) ? link(base, 'contract', m) : StrKey.isValidEd25519PublicKey(m) ? link(base, 'account', m) : m,
  );
}

const show = (v: string) => {
  try {
    return JSON.stringify(scValToNative(xdr.ScVal.fromXDR(v, 'base64')), (_k, x) => (typeof x === 'bigint' ? x.toString() : x));
  } catch {
    return v;
  }
};

/** What token transfers (`transfer` events: from, to, asset) moved in and out of `account` in each transaction: `+0.0076000 USDC`. */
function transfersOf(chain: Chain, account: string, txs: TxRecord[]): Map<string, string[]> {
  const hashes = new Set(txs.map((t) => t.hash));
  const out = new Map<string, string[]>();
  for (const e of chain.events) {
    if (!hashes.has(e.txHash) || e.topic.length < 4) continue;
    try {
      const [name, from, to, asset] = e.topic.map((t) => scValToNative(xdr.ScVal.fromXDR(t, 'base64')) as unknown);
      const amount = scValToNative(xdr.ScVal.fromXDR(e.value, 'base64')) as unknown;
      if (name !== 'transfer' || typeof amount !== 'bigint' || (from !== account && to !== account) || from === to) continue;
      const line = `${to === account ? '+' : '-'}${formatStroops(amount)} ${String(asset).split(':')[0]}`;
      out.set(e.txHash, [...(out.get(e.txHash) ?? []), line]);
    } catch {
      // not a token transfer
    }
  }
  return out;
}

function txRows(base: string, txs: TxRecord[], moved?: Map<string, string[]>): string {
  if (!txs.length) return '<p>No transactions.</p>';
  return `<table><tr><th>ledger</th><th>transaction</th><th>result</th>${moved ? '<th>moved</th>' : ''}<th>operations</th></tr>${txs
    .map(
      (t) =>
        `<tr><td>${t.ledger}</td><td>${link(base, 'tx', t.hash, `${t.hash.slice(0, 12)}…`)}</td><td class="${t.successful ? 'ok' : 'bad'}">${esc(t.resultCodes.transaction)}</td>${moved ? `<td>${esc((moved.get(t.hash) ?? []).join(', '))}</td>` : ''}<td>${t.summary.map((s) => linkify(base, s)).join('<br>')}</td></tr>`,
    )
    .join('')}</table>`;
}

/** HTML pages at the public explorer's path shape: /tx/{hash}, /account/{G}, /contract/{C}. */
export function renderExplorer(chain: Chain, base: string, kind: string, id: string): { status: number; html: string } {
  const recent = (pred: (t: TxRecord) => boolean, n = 50) => {
    const out: TxRecord[] = [];
    for (let i = chain.txOrder.length - 1; i >= 0 && out.length < n; i--) {
      const t = chain.txs.get(chain.txOrder[i]!)!;
      if (pred(t)) out.push(t);
    }
    return out;
  };
  if (kind === 'tx') {
    const t = chain.txs.get(id.toLowerCase());
    if (!t) return { status: 404, html: page('Transaction not found', `<p>No transaction <code>${esc(id)}</code> on this devnet.</p>`, base) };
    const events = chain.events.filter((e) => e.txHash === t.hash);
    const body = `<table>
<tr><th>hash</th><td>${esc(t.hash)}</td></tr>
<tr><th>status</th><td class="${t.successful ? 'ok' : 'bad'}">${t.successful ? 'success' : 'failed'} (${esc(t.resultCodes.transaction)}${t.resultCodes.operations.length ? `: ${esc(t.resultCodes.operations.join(', '))}` : ''})</td></tr>
<tr><th>ledger</th><td>${t.ledger}</td></tr><tr><th>closed at</th><td>${esc(new Date(t.createdAt * 1000).toISOString())}</td></tr>
<tr><th>source</th><td>${link(base, 'account', t.source)}</td></tr><tr><th>fee charged</th><td>${esc(formatStroops(t.feeCharged))} XLM</td></tr>
<tr><th>operations</th><td>${t.summary.map((s) => linkify(base, s)).join('<br>')}</td></tr>
${t.returnValueXdr ? `<tr><th>return value</th><td>${esc(show(t.returnValueXdr))}</td></tr>` : ''}</table>
<h2>Events</h2>${events.length ? `<table><tr><th>contract</th><th>topics</th><th>data</th></tr>${events.map((e) => `<tr><td>${link(base, 'contract', e.contractId)}</td><td>${esc(e.topic.map(show).join(', '))}</td><td>${esc(show(e.value))}</td></tr>`).join('')}</table>` : '<p>None.</p>'}
<h2>Envelope (base64 XDR)</h2><p><code>${esc(t.envelopeXdr)}</code></p>`;
    return { status: 200, html: page(`Transaction ${t.hash.slice(0, 12)}…`, body, base) };
  }
  if (kind === 'account') {
    const a = chain.accounts.get(id);
    if (!a)
      return { status: 404, html: page('Account not found', `<p>No account <code>${esc(id)}</code> on this devnet (fund it with the friendbot).</p>`, base) };
    // Every transaction that touched the account, payments into it included (a settlement's release names it in its transfer).
    const mine = recent((t) => t.touched.includes(id));
    const body = `<table><tr><th>account</th><td>${esc(a.id)}</td></tr><tr><th>XLM</th><td>${esc(formatStroops(a.balance))}</td></tr>
<tr><th>USDC</th><td>${a.usdc ? esc(formatStroops(a.usdc.balance)) : 'no trustline'}</td></tr><tr><th>sequence</th><td>${esc(a.seq.toString())}</td></tr></table>
<h2>Recent transactions</h2>${txRows(base, mine, transfersOf(chain, id, mine))}`;
    return { status: 200, html: page(`Account ${id.slice(0, 8)}…`, body, base) };
  }
  if (kind === 'contract') {
    const c = chain.contracts.get(id);
    if (!c) return { status: 404, html: page('Contract not found', `<p>No contract <code>${esc(id)}</code> on this devnet.</p>`, base) };
    const entries = chain.contractData(id).slice(0, 200);
    const events = chain.events
      .filter((e) => e.contractId === id)
      .slice(-50)
      .reverse();
    const body = `<table><tr><th>contract</th><td>${esc(id)}</td></tr><tr><th>kind</th><td>${esc(c.label)}</td></tr></table>
<h2>Storage (${entries.length})</h2>${entries.length ? `<table><tr><th>key</th><th>value</th></tr>${entries.map((e) => `<tr><td>${esc(show(e.key))}</td><td>${linkify(base, show(e.val))}</td></tr>`).join('')}</table>` : '<p>Empty.</p>'}
<h2>Recent events</h2>${events.length ? `<table><tr><th>ledger</th><th>topics</th><th>data</th><th>tx</th></tr>${events.map((e) => `<tr><td>${e.ledger}</td><td>${linkify(base, e.topic.map(show).join(', '))}</td><td>${esc(show(e.value))}</td><td>${link(base, 'tx', e.txHash, `${e.txHash.slice(0, 12)}…`)}</td></tr>`).join('')}</table>` : '<p>None.</p>'}`;
    return { status: 200, html: page(`Contract ${id.slice(0, 8)}…`, body, base) };
  }
  const body = `<p>Latest ledger ${chain.latest.seq}. ${chain.accounts.size} accounts, ${chain.txs.size} transactions.</p><h2>Recent transactions</h2>${txRows(
    base,
    recent(() => true, 30),
  )}`;
  return { status: 200, html: page('Farebox devnet explorer', body, base) };
}
