#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError } from '@farebox/protocol';
import { devnetPassphrase } from '@farebox/stellar';
import { startDevnet } from './devnet.js';

const USAGE = `farebox-devnet: a local Stellar network (Soroban RPC, Horizon subset, friendbot, explorer)

  --port <n>         port to listen on (default 8000; 0 picks a free one)
  --host <addr>      interface to bind (default 127.0.0.1)
  --data-dir <dir>   keep state across restarts in this directory
  --close <ms|instant>  ledger close interval (default 1000)
  --base-path <p>    serve under a path prefix, e.g. /devnet
  --passphrase <p>   local (default), testnet (stand in for Stellar testnet, x402 stellar:testnet)
                     or a literal network passphrase (env FAREBOX_DEVNET_PASSPHRASE)
  --tls-cert <file>  serve https with this PEM certificate (needs --tls-key)
  --tls-key <file>   the certificate's PEM private key
`;

export async function runDevnetCli(argv: string[], env: Record<string, string | undefined> = {}): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      close: { type: 'string' },
      'base-path': { type: 'string' },
      passphrase: { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const port = values.port === undefined ? 8000 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--port must be an integer 0-65535\n${USAGE}`);
    return 2;
  }
  const close = values.close === undefined ? undefined : values.close === 'instant' ? 'instant' : Number(values.close);
  if (typeof close === 'number' && (!Number.isFinite(close) || close < 10)) {
    process.stderr.write('--close must be "instant" or a number of milliseconds >= 10\n');
    return 2;
  }
  const passphraseSetting = values.passphrase ?? env.FAREBOX_DEVNET_PASSPHRASE;
  try {
    devnetPassphrase(passphraseSetting);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`--passphrase: ${e.problems.join('; ')}\n`);
    return 2;
  }
  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) {
    process.stderr.write('--tls-cert and --tls-key go together\n');
    return 2;
  }
  const tls = values['tls-cert'] && values['tls-key'] ? { cert: readFileSync(values['tls-cert']), key: readFileSync(values['tls-key']) } : undefined;
  const devnet = await startDevnet({
    port,
    ...(values.host ? { host: values.host } : {}),
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
    ...(close !== undefined ? { closeIntervalMs: close } : {}),
    ...(values['base-path'] ? { basePath: values['base-path'] } : {}),
    ...(passphraseSetting ? { passphrase: passphraseSetting } : {}),
    ...(tls ? { tls } : {}),
  });
  const n = devnet.network;
  process.stdout.write(
    [
      `farebox devnet listening on ${devnet.url}`,
      `  passphrase   ${n.passphrase}${n.x402Network === 'stellar:testnet' ? ' (stands in for testnet: x402 stellar:testnet)' : ''}`,
      `  soroban rpc  ${n.rpcUrl}`,
      `  horizon      ${n.horizonUrl}`,
      `  friendbot    ${n.friendbotUrl}?addr=G...`,
      `  explorer     ${devnet.url}/explorer/local`,
      `  registry     ${n.registryContractId}`,
      `  USDC         ${n.usdc.issuer} (contract ${n.usdc.contractId})`,
      `  use it with  FAREBOX_DEVNET_URL=${devnet.url} STELLAR_NETWORK=local${passphraseSetting ? ` FAREBOX_DEVNET_PASSPHRASE='${passphraseSetting}'` : ''}`,
      '',
    ].join('\n'),
  );
  const stop = async () => {
    await devnet.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return 0;
}

// The bin is a host: it reads its own environment (FAREBOX_DEVNET_PASSPHRASE) and passes it on.
runDevnetCli(process.argv.slice(2), process.env).then(
  (code) => {
    if (code) process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`farebox-devnet: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
