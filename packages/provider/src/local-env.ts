import { PublicKeySchema } from '@farebox/protocol';
import { z } from 'zod';
import type { ProviderEnv } from './config.js';
import { ensureKeypairFile } from './keys.js';

/** Options of {@link prepareLocalEnv}. */
export interface LocalEnvOptions {
  /**
   * Where to keep the owner key when neither `AGENT_WALLET_SECRET` nor
   * `KEYPAIR_PATH` is set: created on first run (mode 0600). Default
   * `.farebox/keypair`, from the working directory; keep it out of git.
   */
  keypairPath?: string;
  /** How long to wait for the gateway's `GET /v1/platform/key`. Default 3000 ms. */
  timeoutMs?: number;
  /** Where progress and problems are written, one line each. Default `console.error`. */
  log?: (line: string) => void;
}

const PlatformKeyAnswer = z.object({
  publicKey: PublicKeySchema,
  treasury: PublicKeySchema.optional(),
  network: z.string().optional(),
  passphrase: z.string().optional(),
});

/**
 * The environment of a service that runs next to a local gateway
 * (`npm start` in this repo, `farebox dev`): a copy of `given` (the host's
 * `process.env`; it is not changed) with what a publisher would otherwise set
 * by hand filled in. Every variable already set is left alone.
 *
 * - `FAREBOX_DEVNET_URL`: the devnet the gateway embeds, `<FAREBOX_URL>/devnet`
 *   (`FAREBOX_URL` defaults to `http://127.0.0.1:8787`).
 * - `KEYPAIR_PATH`: a demo owner key at `keypairPath`, created on first run,
 *   unless `AGENT_WALLET_SECRET` or `KEYPAIR_PATH` names one.
 * - `FAREBOX_PLATFORM_PUBLIC_KEY` (and, when `TRUSTLESS_WORK_API_KEY` is set,
 *   `TRUSTLESS_WORK_PLATFORM_ADDRESS`): read from the gateway's
 *   `GET /v1/platform/key`, so the service accepts the calls it signs.
 * - `FAREBOX_DEVNET_PASSPHRASE`: the passphrase the gateway's devnet runs
 *   under (same answer), so the service signs for it and, under the testnet
 *   passphrase, offers x402 `exact` through the gateway's facilitator.
 *
 * A gateway that does not answer is logged, not thrown: {@link createProvider}
 * then reports every setting still missing at once.
 *
 * @example
 * const env = await prepareLocalEnv(process.env);
 * const service = createProvider({ service: 'echo', pricePerCall: '0.001', network: 'local', env }).serve((p) => ({ echo: p }));
 * await service.listen(4101);
 * await service.bootstrap();
 */
export async function prepareLocalEnv(given: ProviderEnv, options: LocalEnvOptions = {}): Promise<ProviderEnv> {
  const env: ProviderEnv = { ...given };
  const log = options.log ?? ((line: string) => console.error(line));
  const gateway = (env.FAREBOX_URL || 'http://127.0.0.1:8787').replace(/\/+$/, '');
  env.FAREBOX_DEVNET_URL ||= `${gateway}/devnet`;

  if (!env.AGENT_WALLET_SECRET && !env.KEYPAIR_PATH) {
    env.KEYPAIR_PATH = options.keypairPath ?? '.farebox/keypair';
    const { publicKey, created } = ensureKeypairFile(env.KEYPAIR_PATH);
    if (created) log(`created a local owner key ${publicKey} in ${env.KEYPAIR_PATH}`);
  }

  const needsTreasury = !!env.TRUSTLESS_WORK_API_KEY && !env.TRUSTLESS_WORK_PLATFORM_ADDRESS;
  if (!env.FAREBOX_PLATFORM_PUBLIC_KEY || needsTreasury || !env.FAREBOX_DEVNET_PASSPHRASE) {
    const url = `${gateway}/v1/platform/key`;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(options.timeoutMs ?? 3000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const answer = PlatformKeyAnswer.safeParse(await res.json());
      if (!answer.success) throw new Error('the answer has no valid publicKey');
      env.FAREBOX_PLATFORM_PUBLIC_KEY ||= answer.data.publicKey;
      if (needsTreasury && answer.data.treasury) env.TRUSTLESS_WORK_PLATFORM_ADDRESS = answer.data.treasury;
      if (answer.data.network === 'local' && answer.data.passphrase) env.FAREBOX_DEVNET_PASSPHRASE ||= answer.data.passphrase;
    } catch (e) {
      const where = env.FAREBOX_URL ? `now ${gateway}` : `unset, so the default ${gateway}`;
      log(
        `cannot read the platform key from ${url} (${(e as Error).message}): set FAREBOX_URL to your gateway's address (${where}; npm start prints it), or FAREBOX_PLATFORM_PUBLIC_KEY to its key`,
      );
    }
  }
  return env;
}
