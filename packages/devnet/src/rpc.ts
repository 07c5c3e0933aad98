import { xdr } from '@stellar/stellar-sdk';
import { z } from 'zod';
import { contractEvent } from './chain-xdr.js';
import { MalformedXdr, PROTOCOL_VERSION, type Chain, type EventRecord } from './core.js';

export class RpcFault extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const EnvelopeParams = z.object({ transaction: z.string().min(1) });
const HashParams = z.object({ hash: z.string().regex(/^[0-9a-fA-F]{64}$/, 'hash must be 64 hex characters') });
const KeysParams = z.object({ keys: z.array(z.string()).max(200) });
const EventsParams = z.object({
  startLedger: z.number().int().nonnegative().optional(),
  endLedger: z.number().int().nonnegative().optional(),
  filters: z
    .array(
      z.object({
        type: z.enum(['contract', 'system', 'diagnostic']).optional(),
        contractIds: z.array(z.string()).optional(),
        topics: z.array(z.array(z.string())).optional(),
      }),
    )
    .optional(),
  pagination: z.object({ cursor: z.string().optional(), limit: z.number().int().nonnegative().optional() }).optional(),
});

function params<T>(schema: z.ZodType<T>, raw: unknown): T {
  const r = schema.safeParse(raw ?? {});
  if (!r.success) throw new RpcFault(-32602, `invalid parameters: ${r.error.issues.map((i) => `${i.path.join('.') || 'params'}: ${i.message}`).join('; ')}`);
  return r.data;
}

function segmentMatches(segment: string, topic: string): boolean {
  return segment === '*' || segment === topic;
}

function topicMatches(filter: string[], topic: string[]): boolean {
  const wildcardTail = filter[filter.length - 1] === '**';
  const segs = wildcardTail ? filter.slice(0, -1) : filter;
  if (wildcardTail ? topic.length < segs.length : topic.length !== segs.length) return false;
  return segs.every((s, i) => segmentMatches(s, topic[i]!));
}

/** The Soroban JSON-RPC methods the SDK's rpc.Server uses. */
export function createRpc(chain: Chain, opts: { friendbotUrl: () => string; instant: boolean; onSubmitted: () => void }) {
  const retention = () => ({
    latestLedger: chain.latest.seq,
    latestLedgerCloseTime: String(chain.latest.closeTime),
    oldestLedger: chain.genesis.seq,
    oldestLedgerCloseTime: String(chain.genesis.closeTime),
  });

  const methods: Record<string, (p: unknown) => unknown> = {
    getHealth: () => ({
      status: 'healthy',
      latestLedger: chain.latest.seq,
      oldestLedger: chain.genesis.seq,
      ledgerRetentionWindow: chain.latest.seq - chain.genesis.seq + 1,
    }),
    getNetwork: () => ({ passphrase: chain.passphrase, protocolVersion: PROTOCOL_VERSION, friendbotUrl: opts.friendbotUrl() }),
    getVersionInfo: () => ({ version: 'farebox-devnet', commitHash: '', buildTimestamp: '', captiveCoreVersion: 'none', protocolVersion: PROTOCOL_VERSION }),
    getFeeStats: () => {
      const stats = {
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
        transactionCount: '0',
        ledgerCount: 1,
      };
      return { sorobanInclusionFee: stats, inclusionFee: stats, latestLedger: chain.latest.seq };
    },
    getLatestLedger: () => {
      const { header, meta } = chain.latestHeaderXdr();
      return {
        id: chain.latest.hash,
        sequence: chain.latest.seq,
        protocolVersion: PROTOCOL_VERSION,
        closeTime: String(chain.latest.closeTime),
        headerXdr: header,
        metadataXdr: meta,
      };
    },
    getLedgerEntries: (raw) => {
      const { keys } = params(KeysParams, raw);
      const entries = [];
      for (const k of keys) {
        let key: xdr.LedgerKey;
        try {
          key = xdr.LedgerKey.fromXDR(k, 'base64');
        } catch {
          throw new RpcFault(-32602, 'invalid_xdr: cannot decode ledger key');
        }
        const found = chain.ledgerEntry(key);
        if (found)
          entries.push({
            key: k,
            xdr: found.entry.toXDR('base64'),
            lastModifiedLedgerSeq: found.lastModified,
            ...(key.switch().name === 'contractData' ? { liveUntilLedgerSeq: chain.latest.seq + 2_000_000 } : {}),
          });
      }
      return { entries, latestLedger: chain.latest.seq };
    },
    simulateTransaction: (raw) => {
      const { transaction } = params(EnvelopeParams, raw);
      const sim = chain.simulate(transaction);
      if (!sim.ok) {
        if (sim.error === 'invalid_xdr') throw new RpcFault(-32602, 'invalid_xdr');
        return { error: sim.error, latestLedger: chain.latest.seq };
      }
      return {
        transactionData: sim.transactionData.toXDR('base64'),
        minResourceFee: sim.resourceFee.toString(),
        // The contract events the call would emit (a token's `transfer`), as Soroban RPC returns them.
        events: sim.events.map((e) => new xdr.DiagnosticEvent({ inSuccessfulContractCall: true, event: contractEvent(e) }).toXDR('base64')),
        results: [{ auth: sim.auth.map((a) => a.toXDR('base64')), xdr: sim.retval.toXDR('base64') }],
        latestLedger: chain.latest.seq,
      };
    },
    sendTransaction: (raw) => {
      const { transaction } = params(EnvelopeParams, raw);
      let r;
      try {
        r = chain.submit(transaction);
      } catch (e) {
        if (e instanceof MalformedXdr) throw new RpcFault(-32602, e.message);
        throw e;
      }
      if (r.status === 'PENDING') opts.onSubmitted();
      return {
        status: r.status,
        hash: r.hash,
        latestLedger: chain.latest.seq,
        latestLedgerCloseTime: String(chain.latest.closeTime),
        ...(r.errorResultXdr ? { errorResultXdr: r.errorResultXdr, diagnosticEventsXdr: [] } : {}),
      };
    },
    getTransaction: (raw) => {
      const { hash } = params(HashParams, raw);
      const t = chain.txs.get(hash.toLowerCase());
      if (!t) return { status: 'NOT_FOUND', ...retention() };
      return {
        status: t.successful ? 'SUCCESS' : 'FAILED',
        txHash: t.hash,
        ...retention(),
        applicationOrder: t.applicationOrder,
        feeBump: t.feeSource !== undefined,
        envelopeXdr: t.envelopeXdr,
        resultXdr: t.resultXdr,
        resultMetaXdr: t.resultMetaXdr,
        events: { transactionEventsXdr: [], contractEventsXdr: t.contractEventsXdr },
        ledger: t.ledger,
        createdAt: String(t.createdAt),
      };
    },
    getEvents: (raw) => {
      const p = params(EventsParams, raw);
      const cursor = p.pagination?.cursor;
      const limit = p.pagination?.limit ?? 100;
      if (limit > 10_000) throw new RpcFault(-32602, 'limit must not exceed 10000');
      if (cursor !== undefined && (p.startLedger !== undefined || p.endLedger !== undefined))
        throw new RpcFault(-32602, 'ledger ranges and cursor cannot both be set');
      if (cursor === undefined && !p.startLedger) throw new RpcFault(-32602, 'startLedger must be positive');
      const filters = p.filters ?? [];
      if (filters.length > 5) throw new RpcFault(-32602, 'maximum 5 filters per request');
      for (const f of filters) {
        if ((f.contractIds?.length ?? 0) > 5) throw new RpcFault(-32602, 'maximum 5 contract IDs per filter');
        if ((f.topics?.length ?? 0) > 5) throw new RpcFault(-32602, 'maximum 5 topics per filter');
        for (const t of f.topics ?? []) {
          if (t.length < 1 || t.length > 5 || (t.length === 5 && t[4] !== '**'))
            throw new RpcFault(-32602, 'topic filters must have 1 to 4 segments (plus an optional trailing "**")');
        }
      }
      let afterId = '';
      if (cursor !== undefined) {
        if (!/^\d{19}-\d{10}$/.test(cursor)) throw new RpcFault(-32602, 'invalid cursor');
        afterId = cursor;
      } else {
        const start = p.startLedger!;
        if (start < chain.genesis.seq || start > chain.latest.seq) {
          throw new RpcFault(-32600, `startLedger must be between the oldest ledger: ${chain.genesis.seq} and the latest ledger: ${chain.latest.seq}`);
        }
        afterId = `${((BigInt(start) << 32n) - 1n).toString().padStart(19, '0')}-9999999999`;
      }
      const endLedger = p.endLedger ?? Number.MAX_SAFE_INTEGER;
      const matches = (e: EventRecord) =>
        filters.length === 0 ||
        filters.some(
          (f) =>
            (!f.type || f.type === 'contract') &&
            (!f.contractIds?.length || f.contractIds.includes(e.contractId)) &&
            (!f.topics?.length || f.topics.some((t) => topicMatches(t, e.topic))),
        );
      const out: EventRecord[] = [];
      const all = chain.events;
      // Events are appended in id order: binary-search the start.
      let lo = 0;
      let hi = all.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (all[mid]!.id <= afterId) lo = mid + 1;
        else hi = mid;
      }
      for (let i = lo; i < all.length && out.length < limit; i++) {
        const e = all[i]!;
        if (e.ledger >= endLedger) break;
        if (matches(e)) out.push(e);
      }
      const full = out.length === limit && limit > 0;
      const nextCursor = full
        ? out[out.length - 1]!.id
        : `${((BigInt(Math.min(endLedger, chain.latest.seq + 1)) << 32n) - 1n).toString().padStart(19, '0')}-9999999999`;
      return {
        events: out.map((e) => ({
          type: 'contract',
          ledger: e.ledger,
          ledgerClosedAt: e.ledgerClosedAt,
          contractId: e.contractId,
          id: e.id,
          operationIndex: e.operationIndex,
          transactionIndex: e.transactionIndex,
          txHash: e.txHash,
          inSuccessfulContractCall: true,
          topic: e.topic,
          value: e.value,
        })),
        cursor: nextCursor,
        ...retention(),
      };
    },
  };

  /** Handles one parsed JSON-RPC request object; always resolves to a response object. */
  return function handle(body: unknown): Record<string, unknown> {
    const req = body && typeof body === 'object' ? (body as { id?: unknown; method?: unknown; params?: unknown; jsonrpc?: unknown }) : {};
    const id = req.id ?? null;
    if (typeof req.method !== 'string') return { jsonrpc: '2.0', id, error: { code: -32600, message: 'invalid request' } };
    const m = methods[req.method];
    if (!m) return { jsonrpc: '2.0', id, error: { code: -32601, message: `method not found: ${req.method}` } };
    try {
      return { jsonrpc: '2.0', id, result: m(req.params) };
    } catch (e) {
      if (e instanceof RpcFault) return { jsonrpc: '2.0', id, error: { code: e.code, message: e.message } };
      return { jsonrpc: '2.0', id, error: { code: -32603, message: e instanceof Error ? e.message : 'internal error' } };
    }
  };
}
