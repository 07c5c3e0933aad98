import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { splitFee } from '@farebox/protocol';
import { startStack, type KitUser, type Stack } from '@farebox/gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { printedRoutes, runFarebox } from './cli.js';

// Issue 50: a service registered with its own key (provider SDK) is invisible to `farebox publisher ...`
// until the key is linked; `farebox publisher link --keypair`, `earnings <G...>` and `settle`.

let s: Stack;
let pub: KitUser;
let svc: { owner: string; secret: string };
let dir: string;
const name = `cli-link-${process.pid % 100000}`;
const gross = 3n * 20_000n;
const { fee, net } = splitFee(gross);

async function cliEnv(user?: KitUser): Promise<Record<string, string>> {
  const home = await mkdtemp(join(tmpdir(), 'farebox-cli-link-'));
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    FAREBOX_CONFIG_DIR: join(home, 'farebox'),
    FAREBOX_URL: s.url,
    ...(user ? { FAREBOX_API_KEY: user.key } : {}),
    BROWSER: 'none',
  };
}

beforeAll(async () => {
  s = await startStack();
  pub = await s.user();
  expect((await pub.api('/v1/publisher/activate', { body: { name: 'CLI Owner' } })).status).toBe(200);
  svc = await s.publish(name, '0.002');
  const caller = await s.user({ topup: 5 });
  for (let i = 0; i < 3; i++) expect((await caller.api('/v1/call', { body: { service: name, payload: { i } } })).status).toBe(200);
  dir = await mkdtemp(join(tmpdir(), 'farebox-keypair-'));
  await writeFile(join(dir, 'keypair'), `${svc.secret}\n`);
}, 120_000);
afterAll(async () => {
  await s?.close();
});

describe('farebox publisher earnings / link / settle', () => {
  it('earnings <G...> shows gross, fee and net without a login', async () => {
    const r = await runFarebox(['publisher', 'earnings', svc.owner], { env: await cliEnv() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`owner           ${svc.owner}`);
    expect(r.stdout).toMatch(/calls\s+3\n/);
    expect(r.stdout).toMatch(/gross\s+\$0\.006\n/);
    expect(r.stdout).toMatch(/fee \(5 %\)\s+\$0\.0003\n/);
    expect(r.stdout).toMatch(/net\s+\$0\.0057\n/);
    expect(r.stdout).toContain('Payouts: (none yet)');
    expect(Number(fee)).toBe(3000);
  });

  it('link refuses a file without a seed; with the key, overview shows the service; settle pays the key its net', async () => {
    const env = await cliEnv(pub);
    await writeFile(join(dir, 'bad'), 'not a seed\n');
    const bad = await runFarebox(['publisher', 'link', '--keypair', join(dir, 'bad')], { env });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(`${join(dir, 'bad')} does not hold a Stellar secret seed (S...) or JSON with "secret"`);

    const before = await runFarebox(['publisher', 'overview', '--json'], { env });
    expect(JSON.parse(before.stdout)).toMatchObject({ calls: 0, services: [] });

    const linked = await runFarebox(['publisher', 'link', '--keypair', join(dir, 'keypair')], { env });
    expect(linked.code, linked.stderr).toBe(0);
    expect(linked.stdout).toBe(
      `Linked ${svc.owner} to your account (${name}): its services and earnings now show in \`farebox publisher overview\`, \`settlements\` and \`analytics\`, and \`farebox publisher settle\` pays them out (to ${svc.owner}).\n`,
    );
    const o = await runFarebox(['publisher', 'overview'], { env });
    expect(o.stdout).toMatch(/calls\s+3\n/);
    expect(o.stdout).toMatch(/earned \(net\)\s+\$0\.0057\n/);
    expect(o.stdout).toContain(name);

    const walletBefore = await s.usdc(svc.owner);
    const settled = await runFarebox(['publisher', 'settle'], { env });
    expect(settled.code, settled.stderr).toBe(0);
    expect(settled.stdout).toMatch(
      new RegExp(`^Settled now:\\n- 3 calls: gross \\$0\\.006, fee \\$0\\.0003 \\(5 %\\), net \\$0\\.0057 paid to ${svc.owner}\\n  release: http`),
    );
    expect(await s.usdc(svc.owner)).toBe(walletBefore + net);
    const again = await runFarebox(['publisher', 'settle'], { env });
    expect(again.stdout).toBe('nothing to settle: no earnings since the last settlement\n');
    expect(printedRoutes().offenders).toEqual([]);
  }, 60_000);
});

// After the publisher's figures above (its call adds to them).
describe('farebox call --max-cost (issue 50, item 5)', () => {
  it('a call priced over --max-cost is refused naming the price, the flag and that nothing was charged; the balance shows the tenth of a cent', async () => {
    const caller = await s.user({ topup: 5 });
    const env = await cliEnv(caller);
    const refused = await runFarebox(['call', name, '{"x":1}', '--max-cost', '0.001'], { env });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      `this call to ${name} costs $0.002, over the most it may cost ($0.001: Farebox-Max-Cost, --max-cost in the CLI); nothing was charged`,
    );
    const paid = await runFarebox(['call', name, '{"x":1}', '--max-cost', '0.002'], { env });
    expect(paid.code, paid.stderr).toBe(0);
    const balance = await runFarebox(['balance'], { env });
    expect(balance.stdout).toMatch(/credits\s+\$9\.998 \(99980000 base units\)/);
  });
});
