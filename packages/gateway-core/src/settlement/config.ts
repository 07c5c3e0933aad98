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

/** Settlement settings as the host passes them (the gateway host reads them from the variables named above). */
export interface SettlementConfigOptions {
  /** Cycle length: `500ms`, `10s`, `5m`, `1h`, or a number of seconds (default 1 h). */
  settlementInterval?: string | number;
  /** Funding tick (default 10 s). */
  fundingInterval?: string | number;
  escrowUrl?: string;
  escrowApiKey?: string;
  /** Request budget toward the escrow provider: `requests/windowMs` text (as `FAREBOX_ESCROW_BUDGET`) or the pair. */
  escrowBudget?: string | { requests: number; windowMs: number };
  /** Top the treasury up with devnet USDC when it runs short (local network only; default on there). */
  treasuryAutofund?: boolean;
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

/** Validates the settlement settings (options only; every problem reported together). */
export function resolveSettlementConfig(options: SettlementConfigOptions, network: 'local' | 'testnet' | 'mainnet', devnetUrl: string): SettlementSettings {
  const problems: string[] = [];
  const settlementIntervalMs = parseDuration(options.settlementInterval ?? '1h', 'FAREBOX_SETTLEMENT_INTERVAL', problems) ?? 0;
  const fundingIntervalMs = parseDuration(options.fundingInterval ?? '10s', 'FAREBOX_FUNDING_INTERVAL', problems) ?? 0;
  const escrowUrl = (options.escrowUrl ?? (network === 'local' ? `${devnetUrl}/escrow` : ESCROW_URLS[network])).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(escrowUrl)) problems.push('TRUSTLESS_WORK_URL must be an http(s) URL');
  const escrowApiKey = options.escrowApiKey ?? (network === 'local' ? 'farebox-devnet' : undefined);
  let escrowBudget = { requests: 50, windowMs: 60_000 };
  const budget = options.escrowBudget;
  if (budget !== undefined && budget !== '') {
    const m = typeof budget === 'string' ? /^(\d+)\/(\d+)$/.exec(budget) : ['', String(budget.requests), String(budget.windowMs)];
    if (!m || !/^\d+$/.test(m[1]!) || !/^\d+$/.test(m[2]!) || Number(m[1]) < 1 || Number(m[2]) < 1)
      problems.push('FAREBOX_ESCROW_BUDGET must be requests/windowMs, e.g. 50/60000');
    else escrowBudget = { requests: Number(m[1]), windowMs: Number(m[2]) };
  }
  if (problems.length) throw new ConfigError(problems);
  return {
    settlementIntervalMs,
    fundingIntervalMs,
    escrowUrl,
    escrowApiKey,
    escrowBudget,
    treasuryAutofund: network === 'local' && options.treasuryAutofund !== false,
  };
}
