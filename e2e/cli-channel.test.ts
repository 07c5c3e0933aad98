import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { createAccounts, keypairSigner } from '@farebox/stellar';
import { startStack, type Stack } from '@farebox/gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFarebox } from './cli.js';

// Issue 48: an agent with no account pays the catalog from an MPP channel with the CLI: `farebox channel open`,
// `farebox call --channel`, `farebox channel status`, `farebox channel close`; the treasury's watcher closes it and
// the funder has the rest back.

let s: Stack;
let env: Record<string, string>;
let keyFile: string;
const funder = Keypair.random();
const name = `cli-chan-${process.pid % 100000}`;

beforeAll(async () => {
  s = await startStack();
  await s.publish(name, '0.002');
  const home = await mkdtemp(join(tmpdir(), 'farebox-cli-channel-'));
  env = { PATH: process.env.PATH ?? '', HOME: home, FAREBOX_CONFIG_DIR: join(home, 'farebox'), FAREBOX_URL: s.url, BROWSER: 'none' };
  await s.devnet.friendbot(funder.publicKey());
  await createAccounts(s.gw.core.network).ensureUsdcTrustline(keypairSigner(funder.secret()));
  await s.devnet.mintUsdc(funder.publicKey(), 10_000_000n);
  keyFile = join(home, 'funder');
  await writeFile(keyFile, `${funder.secret()}\n`);
}, 120_000);
afterAll(async () => {
  await s?.close();
});

describe('farebox channel', () => {
  it('opens a channel, pays calls from it with no account, shows it, and closes it', async () => {
    const usage = await runFarebox(['channel', 'open', '--keypair', keyFile], { env });
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain('--amount required: USDC as a decimal, e.g. --amount 5');

    const opened = await runFarebox(['channel', 'open', '--amount', '0.5', '--keypair', keyFile, '--json'], { env });
    expect(opened.code, opened.stderr).toBe(0);
    const { channel } = JSON.parse(opened.stdout) as { channel: string };
    expect(channel).toMatch(/^C[A-Z2-7]{55}$/);
    // The commitment key is kept for this user alone.
    expect((await stat(join(env.FAREBOX_CONFIG_DIR!, 'channels', `${channel}.json`))).mode & 0o777).toBe(0o600);

    for (const i of [1, 2]) {
      const r = await runFarebox(['call', name, JSON.stringify({ i }), '--channel'], { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`"i": ${i}`);
      expect(r.stdout).toContain(`paid 0.002 USDC from channel ${channel}; ${i === 1 ? '0.002' : '0.004'} USDC paid from it in all`);
    }
    const refused = await runFarebox(['call', name, '{}', '--channel', '--max-cost', '0.001'], { env });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('nothing was signed or paid');

    const status = await runFarebox(['channel', 'status', '--json'], { env });
    expect(JSON.parse(status.stdout)).toMatchObject({ channel, deposited: '5000000', paid: '40000', left: '4960000', withdrawn: '0' });
    const file = JSON.parse(await readFile(join(env.FAREBOX_CONFIG_DIR!, 'channels', `${channel}.json`), 'utf8'));
    expect(file.cumulativeAmount).toBe('40000');

    const before = await s.usdc(funder.publicKey());
    const closing = await runFarebox(['channel', 'close', '--keypair', keyFile], { env });
    expect(closing.code, closing.stderr).toBe(0);
    expect(closing.stdout).toContain(`Closing ${channel}`);
    const actions = await s.gw.core.mpp.watcher!.tick();
    expect(actions).toMatchObject([{ channel, action: 'close', amount: 40_000n }]);
    expect(await s.usdc(funder.publicKey())).toBe(before + 5_000_000n - 40_000n);
  }, 120_000);
});
