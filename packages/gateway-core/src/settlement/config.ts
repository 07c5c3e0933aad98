import { ConfigError } from '@farebox/protocol';

export interface SettlementSettings {
  /** Cycle length: a cycle older than this is released by the next tick. Default 1 h (`FAREBOX_SETTLEMENT_INTERVAL`). */
  settlementIntervalMs: number;
  /** Funding tick: new earnings are claimed and funded this often. Default 10 s (`FAREBOX_FUNDING_INTERVAL`). */
  fundingIntervalMs: number;
  /** Escrow provider base URL (`TRUSTLESS_WORK_URL`); default the devnet's `/escrow` locally, Trustless Work's API otherwise. */
  escrowUrl: string;
  /** `x-api-key` (`TRUSTLESS_WORK_API_KEY`); the devnet accepts any key. Without one off the local network, settlement is off. */
  escrowApiKey: string | undefined;
  /** Client-side request budget toward the provider (`FAREBOX_ESCROW_BUDGET`, `requests/windowMs`, default 50/60000). */
  escrowBudget: { requests: number; windowMs: number };
  /** Local network: the treasury is topped up with devnet USDC when it runs short (`FAREBOX_TREASURY_AUTOFUND`, default on locally). */
  treasuryAutofund: boolean;
}

export interface SettlementConfigOptions {
  settlementInterval?: string | number;
  fundingInterval?: string | number;
  escrowUrl?: string;
  escrowApiKey?: string;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `500ms`, `10s`, `5m`, `1h`; a bare number is seconds. */
export function parseDuration(value: string | number, name: string, problems: string[]): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(String(value));
  const ms = m ? Math.round(Number(m[1]) * UNITS[m[2] ?? 's']!) : Number.NaN;
  if (!Number.isFinite(ms) || ms < 1) {
    problems.push(`${name} must be a duration such as 500ms, 10s, 5m or 1h (a bare number is seconds)`);
    return undefined;
  }
  return ms;
}

const ESCROW_URLS = { testnet: 'https://dev.api.trustlesswork.com', mainnet: 'https://api.trustlesswork.com' } as const;

export function resolveSettlementConfig(
  options: SettlementConfigOptions,
  env: Record<string, string | undefined>,
  network: 'local' | 'testnet' | 'mainnet',
  devnetUrl: string,
): SettlementSettings {
  const problems: string[] = [];
  const settlementIntervalMs = parseDuration(options.settlementInterval ?? env.FAREBOX_SETTLEMENT_INTERVAL ?? '1h', 'FAREBOX_SETTLEMENT_INTERVAL', problems) ?? 0;
  const fundingIntervalMs = parseDuration(options.fundingInterval ?? env.FAREBOX_FUNDING_INTERVAL ?? '10s', 'FAREBOX_FUNDING_INTERVAL', problems) ?? 0;
  const escrowUrl = (options.escrowUrl ?? env.TRUSTLESS_WORK_URL ?? (network === 'local' ? `${devnetUrl}/escrow` : ESCROW_URLS[network])).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(escrowUrl)) problems.push('TRUSTLESS_WORK_URL must be an http(s) URL');
  const escrowApiKey = options.escrowApiKey ?? env.TRUSTLESS_WORK_API_KEY ?? (network === 'local' ? 'farebox-devnet' : undefined);
  let escrowBudget = { requests: 50, windowMs: 60_000 };
  if (env.FAREBOX_ESCROW_BUDGET) {
    const m = /^(\d+)\/(\d+)$/.exec(env.FAREBOX_ESCROW_BUDGET);
    if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) problems.push('FAREBOX_ESCROW_BUDGET must be requests/windowMs, e.g. 50/60000');
    else escrowBudget = { requests: Number(m[1]), windowMs: Number(m[2]) };
  }
  const autofund = env.FAREBOX_TREASURY_AUTOFUND;
  if (autofund !== undefined && autofund !== 'true' && autofund !== 'false') problems.push('FAREBOX_TREASURY_AUTOFUND must be true or false');
  if (problems.length) throw new ConfigError(problems);
  return {
    settlementIntervalMs,
    fundingIntervalMs,
    escrowUrl,
    escrowApiKey,
    escrowBudget,
    treasuryAutofund: network === 'local' && autofund !== 'false',
  };
}
