// __SERVICE__: a paid Farebox service. Callers pay __PRICE__ USDC per call
// through the gateway (platform-signed calls) and, when TRUSTLESS_WORK_API_KEY
// is set, directly through an escrow.
import { createProvider, prepareLocalEnv } from '@farebox/provider';

// Next to the local gateway (`farebox dev`, FAREBOX_URL): its devnet, an owner
// key in .farebox/keypair (it receives the payments; kept out of git) and the
// gateway's platform key, so the calls it signs are accepted. Variables you
// set yourself win.
const env = await prepareLocalEnv(process.env);

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
