import type { EscrowClient } from '@farebox/escrow';
import type { NetworkConfig, TxSigner } from '@farebox/stellar';
import { ClientError } from '../errors.js';
import type { AuthEntrySigner } from './exact.js';
import type { Requester } from './http.js';
import type { ServiceRegistry } from './types.js';

/** What the parts of a direct client share, built once by `createClient`. */
export interface DirectContext {
  net: NetworkConfig;
  signer: TxSigner | undefined;
  /** Signs Soroban authorization entries (`exact` payments); undefined when the key cannot, or `exact` is off. */
  authSigner: AuthEntrySigner | undefined;
  request: Requester;
  /** What the escrow payer sends its requests with (`ClientOptions.fetch`, `timeoutMs`). */
  fetch: typeof fetch;
  timeoutMs: number;
  /** Check the service's `/manifest` before paying (`ClientOptions.verifyEndpoint`). */
  verifyEndpoint: boolean;
  escrowApi(): EscrowClient;
  registryApi(): ServiceRegistry;
  /** The platform treasury escrows name (option, environment, or the gateway's `/v1/platform/key`). */
  platformAddress(): Promise<string>;
  /** The gateway's base URL, needed by `what`. */
  platformUrl(what: string): string;
}

export function requireSigner(ctx: DirectContext): TxSigner {
  if (!ctx.signer) throw new ClientError('CONFIG', 'no payer key: pass secret or signer to createClient');
  return ctx.signer;
}
