import { StrKey } from '@stellar/stellar-sdk';
import { MalformedXdr, PROTOCOL_VERSION, BASE_RESERVE, type Chain, type TxRecord } from './core.js';
import { formatStroops, MAX_INT64 } from './xdrutil.js';

export interface HttpReply {
  status: number;
  body: unknown;
  contentType?: string;
}

const problem = (status: number, title: string, detail: string, extras?: unknown): HttpReply => ({
  status,
  contentType: 'application/problem+json; charset=utf-8',
  body: {
    type:
      status === 404
        ? 'https://stellar.org/horizon-errors/not_found'
        : status === 400 && extras
          ? 'https://stellar.org/horizon-errors/transaction_failed'
          : 'https://stellar.org/horizon-errors/bad_request',
    title,
    status,
    detail,
    ...(extras ? { extras } : {}),
  },
});

/** Horizon's transaction JSON for a successful transaction. */
export function horizonTx(t: TxRecord, base: string) {
  return {
    _links: { self: { href: `${base}/transactions/${t.hash}` } },
    id: t.hash,
    hash: t.hash,
    ledger: t.ledger,
    successful: t.successful,
    created_at: new Date(t.createdAt * 1000).toISOString(),
    source_account: t.source,
    fee_account: t.feeSource ?? t.source,
    fee_charged: t.feeCharged.toString(),
    envelope_xdr: t.envelopeXdr,
    result_xdr: t.resultXdr,
    result_meta_xdr: t.resultMetaXdr,
    paging_token: ((BigInt(t.ledger) << 32n) | (BigInt(t.applicationOrder) << 12n)).toString(),
  };
}

export function failedReply(t: {
  envelopeXdr: string;
  resultXdr?: string;
  resultCodes: { transaction: string; operations: string[] };
  hash: string;
}): HttpReply {
  return problem(
    400,
    'Transaction Failed',
    `The transaction failed when submitted to the stellar network. The \`extras.result_codes\` field on this response contains further details. Result codes: ${t.resultCodes.transaction}${t.resultCodes.operations.length ? ` [${t.resultCodes.operations.join(', ')}]` : ''}`,
    {
      envelope_xdr: t.envelopeXdr,
      result_xdr: t.resultXdr ?? '',
      result_codes: t.resultCodes.operations.length ? t.resultCodes : { transaction: t.resultCodes.transaction },
      hash: t.hash,
    },
  );
}

/** The Horizon subset: root, accounts, transactions (submit and read), fee stats. */
export function createHorizon(chain: Chain, opts: { baseUrl: () => string; awaitInclusion: (hash: string) => Promise<TxRecord>; onSubmitted: () => void }) {
  function root(): HttpReply {
    return {
      status: 200,
      body: {
        _links: {
          account: { href: `${opts.baseUrl()}/accounts/{account_id}`, templated: true },
          friendbot: { href: `${opts.baseUrl()}/friendbot{?addr}`, templated: true },
        },
        horizon_version: 'farebox-devnet',
        core_version: 'farebox-devnet',
        network_passphrase: chain.passphrase,
        current_protocol_version: PROTOCOL_VERSION,
        supported_protocol_version: PROTOCOL_VERSION,
        core_supported_protocol_version: PROTOCOL_VERSION,
        history_latest_ledger: chain.latest.seq,
        history_latest_ledger_closed_at: new Date(chain.latest.closeTime * 1000).toISOString(),
        history_elder_ledger: chain.genesis.seq,
        core_latest_ledger: chain.latest.seq,
      },
    };
  }

  function account(id: string): HttpReply {
    if (!StrKey.isValidEd25519PublicKey(id)) return problem(400, 'Bad Request', `invalid account id: ${id}`);
    const a = chain.accounts.get(id);
    if (!a) return problem(404, 'Resource Missing', 'The resource at the url requested was not found.');
    const base = opts.baseUrl();
    const balances: unknown[] = [];
    if (a.usdc) {
      balances.push({
        balance: formatStroops(a.usdc.balance),
        limit: formatStroops(a.usdc.limit > MAX_INT64 ? MAX_INT64 : a.usdc.limit),
        buying_liabilities: '0.0000000',
        selling_liabilities: '0.0000000',
        last_modified_ledger: a.usdc.lastModified,
        is_authorized: true,
        is_authorized_to_maintain_liabilities: true,
        asset_type: 'credit_alphanum4',
        asset_code: 'USDC',
        asset_issuer: chain.usdcIssuer,
      });
    }
    balances.push({ balance: formatStroops(a.balance), buying_liabilities: '0.0000000', selling_liabilities: '0.0000000', asset_type: 'native' });
    return {
      status: 200,
      body: {
        _links: {
          self: { href: `${base}/accounts/${id}` },
          transactions: { href: `${base}/accounts/${id}/transactions{?cursor,limit,order}`, templated: true },
          data: { href: `${base}/accounts/${id}/data/{key}`, templated: true },
        },
        id,
        account_id: id,
        sequence: a.seq.toString(),
        sequence_ledger: a.lastModified,
        subentry_count: a.numSubEntries,
        last_modified_ledger: a.lastModified,
        thresholds: { low_threshold: 0, med_threshold: 0, high_threshold: 0 },
        flags: { auth_required: false, auth_revocable: false, auth_immutable: false, auth_clawback_enabled: false },
        balances,
        signers: [{ weight: 1, key: id, type: 'ed25519_public_key' }],
        data: {},
        num_sponsoring: 0,
        num_sponsored: 0,
        paging_token: id,
        // Not part of Horizon's response; handy for tools and documented in docs/devnet.md.
        minimum_balance: formatStroops((2n + BigInt(a.numSubEntries)) * BASE_RESERVE),
      },
    };
  }

  async function submit(form: URLSearchParams): Promise<HttpReply> {
    const tx = form.get('tx');
    if (!tx) return problem(400, 'Transaction Malformed', 'the request must carry a `tx` form field with a base64 transaction envelope');
    let r;
    try {
      r = chain.submit(tx);
    } catch (e) {
      if (e instanceof MalformedXdr) return problem(400, 'Transaction Malformed', `Horizon could not decode the transaction envelope: ${e.message}`);
      throw e;
    }
    if (r.status === 'ERROR') return failedReply({ envelopeXdr: tx, resultXdr: r.errorResultXdr!, resultCodes: r.resultCodes!, hash: r.hash });
    if (r.status === 'PENDING') opts.onSubmitted();
    const rec = await opts.awaitInclusion(r.hash);
    if (!rec.successful) return failedReply(rec);
    return { status: 200, body: horizonTx(rec, opts.baseUrl()) };
  }

  function transaction(hash: string): HttpReply {
    const t = chain.txs.get(hash.toLowerCase());
    if (!t) return problem(404, 'Resource Missing', 'The resource at the url requested was not found.');
    return { status: 200, body: horizonTx(t, opts.baseUrl()) };
  }

  function feeStats(): HttpReply {
    const p = {
      max: '100',
      min: '100',
      mode: '100',
      p10: '100',
      p20: '100',
      p30: '100',
      p40: '100',
      p50: '100',
      p60: '100',
      p70: '100',
      p80: '100',
      p90: '100',
      p95: '100',
      p99: '100',
    };
    return {
      status: 200,
      body: { last_ledger: String(chain.latest.seq), last_ledger_base_fee: '100', ledger_capacity_usage: '0.00', fee_charged: p, max_fee: p },
    };
  }

  return { root, account, submit, transaction, feeStats, problem };
}
