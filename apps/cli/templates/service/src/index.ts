// __SERVICE__: a paid Farebox service. Callers pay __PRICE__ USDC per call
// through the gateway (platform-signed calls) and, when TRUSTLESS_WORK_API_KEY
// is set, directly through an escrow.
import { createProvider, ensureKeypairFile } from '@farebox/provider';

const env = { ...process.env };
const gateway = (env.FAREBOX_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
// The local gateway (`farebox dev`) embeds the devnet under /devnet.
env.FAREBOX_DEVNET_URL ??= `${gateway}/devnet`;
if (!env.AGENT_WALLET_SECRET && !env.KEYPAIR_PATH) {
  // The service's owner key: it receives the payments. Kept out of git.
  env.KEYPAIR_PATH = '.farebox/keypair';
  const { publicKey, created } = ensureKeypairFile(env.KEYPAIR_PATH);
  if (created) console.log(`created the owner key ${publicKey} in ${env.KEYPAIR_PATH}`);
}
if (!env.FAREBOX_PLATFORM_PUBLIC_KEY || (env.TRUSTLESS_WORK_API_KEY && !env.TRUSTLESS_WORK_PLATFORM_ADDRESS)) {
  // Accept calls signed by this gateway and, with an escrow API key, direct escrows naming its treasury.
  const res = await fetch(`${gateway}/v1/platform/key`);
  const platform = (await res.json()) as { publicKey: string; treasury: string };
  env.FAREBOX_PLATFORM_PUBLIC_KEY ||= platform.publicKey;
  if (env.TRUSTLESS_WORK_API_KEY) env.TRUSTLESS_WORK_PLATFORM_ADDRESS ||= platform.treasury;
}

const service = createProvider({
  service: '__SERVICE__',
  pricePerCall: '__PRICE__',
  description: '__DESCRIPTION__',
  network: 'local',
  env,
}).serve(async (payload) => {
  // Your service: `payload` is the caller's JSON input, already paid for.
  const text = typeof (payload as { text?: unknown }).text === 'string' ? (payload as { text: string }).text : '';
  return { reversed: [...text].reverse().join(''), length: text.length };
});

const { url } = await service.listen(Number(env.PORT ?? 4200));
console.log(`__SERVICE__ listening on ${url}/ (manifest: ${url}/manifest)`);
const registered = await service.bootstrap();
console.log(`registry: ${registered.action} "${registered.service}" at ${registered.endpoint}`);
