import { Address, Contract, nativeToScVal, scValToNative, xdr } from '@stellar/stellar-sdk';
import { z } from 'zod';
import { REGISTRY_ERRORS } from './contract-errors.js';
import { StellarError } from './errors.js';
import type { NetworkConfig } from './network.js';
import { invokeAsSource, rpcCall, rpcServer, simulateRead, type ContractErrorMapper } from './soroban.js';
import type { TxSigner } from './signer.js';

/** One registry entry, as `get_agent` returns it. */
export interface RegistryAgent {
  owner: string;
  service: string;
  pricePerCall: bigint;
  endpoint: string;
  description: string;
  totalCalls: bigint;
  totalEarned: bigint;
  /** Unix seconds. */
  createdAt: number;
}

export type RegistryEventType = 'agent_registered' | 'agent_updated' | 'agent_deregistered';

export type RegistryEvent = {
  /** The event id, usable as a cursor. */
  id: string;
  ledger: number;
  txHash: string;
  type: RegistryEventType;
  owner: string;
  service: string;
  pricePerCall?: bigint;
  timestamp?: number;
};

export interface RegisterInput {
  service: string;
  pricePerCall: bigint;
  endpoint: string;
  description: string;
}

export interface RegistryEventsOptions {
  cursor?: string;
  startLedger?: number;
  limit?: number;
}

export interface RegistryClient {
  readonly contractId: string;
  getAgent(service: string): Promise<RegistryAgent | null>;
  register(signer: TxSigner, input: RegisterInput): Promise<{ txHash: string }>;
  update(signer: TxSigner, service: string, changes: { pricePerCall?: bigint; endpoint?: string; description?: string }): Promise<{ txHash: string }>;
  deregister(signer: TxSigner, service: string): Promise<{ txHash: string }>;
  events(opts?: RegistryEventsOptions): Promise<{ events: RegistryEvent[]; cursor: string; latestLedger: number }>;
}

const EVENT_TYPES: readonly RegistryEventType[] = ['agent_registered', 'agent_updated', 'agent_deregistered'];

const AgentSchema = z.object({
  owner: z.string(),
  service: z.string(),
  price_per_call: z.bigint(),
  endpoint: z.string(),
  description: z.string(),
  total_calls: z.union([z.bigint(), z.number()]).transform(BigInt),
  total_earned: z.union([z.bigint(), z.number()]).transform(BigInt),
  created_at: z.union([z.bigint(), z.number()]).transform(Number),
});

const mapRegistryError: ContractErrorMapper = (n) => {
  const known = REGISTRY_ERRORS[n];
  return known ? new StellarError(known.code, `registry refused: ${known.message} (contract error #${n})`, { contractError: n, name: known.name }) : undefined;
};

const str = (v: string) => nativeToScVal(v, { type: 'string' });
const i128 = (v: bigint) => nativeToScVal(v, { type: 'i128' });
const option = (v: xdr.ScVal | undefined) => v ?? xdr.ScVal.scvVoid();

function decodeAgent(val: xdr.ScVal): RegistryAgent | null {
  if (val.switch().name === 'scvVoid') return null;
  const parsed = AgentSchema.safeParse(scValToNative(val));
  if (!parsed.success) throw new StellarError('RPC_ERROR', 'get_agent returned an unexpected value', { issues: parsed.error.issues });
  const a = parsed.data;
  return {
    owner: a.owner,
    service: a.service,
    pricePerCall: a.price_per_call,
    endpoint: a.endpoint,
    description: a.description,
    totalCalls: a.total_calls,
    totalEarned: a.total_earned,
    createdAt: a.created_at,
  };
}

function decodeEvent(e: { id: string; ledger: number; txHash: string; topic: xdr.ScVal[]; value: xdr.ScVal }): RegistryEvent | null {
  const [t0, t1] = e.topic;
  if (!t0 || !t1) return null;
  const type = scValToNative(t0) as unknown;
  if (typeof type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(type)) return null;
  const owner = scValToNative(t1) as unknown;
  if (typeof owner !== 'string') return null;
  const data = scValToNative(e.value) as unknown;
  const base = { id: e.id, ledger: e.ledger, txHash: e.txHash, type: type as RegistryEventType, owner };
  if (type === 'agent_registered') {
    if (!Array.isArray(data) || typeof data[0] !== 'string') return null;
    const ev: RegistryEvent = { ...base, service: data[0] };
    if (typeof data[1] === 'bigint') ev.pricePerCall = data[1];
    if (typeof data[2] === 'bigint' || typeof data[2] === 'number') ev.timestamp = Number(data[2]);
    return ev;
  }
  const service = Array.isArray(data) ? data[0] : data;
  return typeof service === 'string' ? { ...base, service } : null;
}

/**
 * The client of the registry contract (`register_agent`, `update_agent`,
 * `deregister_agent`, `get_agent`, and its events), through Soroban RPC.
 *
 * @example
 * const registry = createRegistryClient(resolveNetwork({ network: 'local' }));
 * await registry.register(keypairSigner(secret), { service: 'weather', pricePerCall: 100_000n, endpoint: 'https://...', description: '...' });
 */
export function createRegistryClient(config: NetworkConfig): RegistryClient {
  const contractId = config.registryContractId;
  if (!contractId) {
    throw new StellarError('NOT_CONFIGURED', `no registry contract id for ${config.name}: pass contractId or set STELLAR_CONTRACT_ID`);
  }
  const server = rpcServer(config);
  const contract = new Contract(contractId);

  const requireService = (service: unknown): string => {
    if (typeof service !== 'string' || service.length === 0) throw new StellarError('INVALID_INPUT', 'service must be a non-empty string');
    return service;
  };
  const requireSigner = (signer: TxSigner) => {
    if (!signer || typeof signer.publicKey !== 'string' || typeof signer.signTransaction !== 'function') {
      throw new StellarError('INVALID_INPUT', 'a signer with publicKey and signTransaction is required');
    }
  };
  const requireBigint = (label: string, v: unknown): bigint => {
    if (typeof v !== 'bigint') throw new StellarError('INVALID_INPUT', `${label} must be a bigint of base units`);
    return v;
  };

  return {
    contractId,
    async getAgent(service) {
      requireService(service);
      try {
        const val = await simulateRead(server, config, contract.call('get_agent', str(service)), mapRegistryError);
        return decodeAgent(val);
      } catch (e) {
        // A contract-level failure of get_agent means "no such entry"; transport errors propagate.
        if (
          e instanceof StellarError &&
          (e.code === 'NOT_FOUND' || (e.code === 'TX_FAILED' && /Error\((Contract|WasmVm)/.test(String((e.data as { simulation?: string })?.simulation))))
        )
          return null;
        throw e;
      }
    },
    async register(signer, input) {
      requireSigner(signer);
      const op = contract.call(
        'register_agent',
        new Address(signer.publicKey).toScVal(),
        str(requireService(input.service)),
        i128(requireBigint('pricePerCall', input.pricePerCall)),
        str(String(input.endpoint ?? '')),
        str(String(input.description ?? '')),
      );
      const { txHash } = await invokeAsSource(server, config, signer, op, mapRegistryError);
      return { txHash };
    },
    async update(signer, service, changes) {
      requireSigner(signer);
      const op = contract.call(
        'update_agent',
        str(requireService(service)),
        option(changes.pricePerCall === undefined ? undefined : i128(requireBigint('pricePerCall', changes.pricePerCall))),
        option(changes.endpoint === undefined ? undefined : str(changes.endpoint)),
        option(changes.description === undefined ? undefined : str(changes.description)),
      );
      const { txHash } = await invokeAsSource(server, config, signer, op, mapRegistryError);
      return { txHash };
    },
    async deregister(signer, service) {
      requireSigner(signer);
      const { txHash } = await invokeAsSource(server, config, signer, contract.call('deregister_agent', str(requireService(service))), mapRegistryError);
      return { txHash };
    },
    async events(opts = {}) {
      const limit = opts.limit ?? 100;
      const filters = [
        { type: 'contract' as const, contractIds: [contractId], topics: EVENT_TYPES.map((t) => [nativeToScVal(t, { type: 'symbol' }).toXDR('base64'), '*']) },
      ];
      let startLedger = opts.startLedger;
      if (!opts.cursor && startLedger === undefined) {
        const health = await rpcCall('getHealth', () => server.getHealth());
        startLedger = health.oldestLedger;
      }
      const res = await rpcCall('getEvents', () =>
        opts.cursor ? server.getEvents({ filters, cursor: opts.cursor, limit }) : server.getEvents({ filters, startLedger: startLedger ?? 1, limit }),
      );
      const events: RegistryEvent[] = [];
      for (const e of res.events) {
        const decoded = decodeEvent(e);
        if (decoded) events.push(decoded);
      }
      return { events, cursor: res.cursor, latestLedger: res.latestLedger };
    },
  };
}
