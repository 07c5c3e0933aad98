import { mkdtemp } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyWebhook } from '@farebox/client';
import { eventually } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFarebox } from './cli.js';
import { startStack, type Stack, type StackUser } from './stack.js';

// `farebox webhooks` against a running local stack, with a receiver on a
// loopback port (the stack allows loopback endpoints).
describe('farebox webhooks', () => {
  let h: Stack;
  let alice: StackUser;
  let tmp: string;
  const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end('ok');
    });
  });
  let hookUrl = '';

  beforeAll(async () => {
    h = await startStack();
    alice = await h.user();
    tmp = await mkdtemp(join(tmpdir(), 'farebox-cli-webhooks-'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  }, 240_000);
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await h?.close();
  });

  const env = (key: string) => ({
    PATH: process.env.PATH ?? '',
    HOME: tmp,
    FAREBOX_CONFIG_DIR: join(tmp, 'farebox'),
    FAREBOX_URL: h.url,
    FAREBOX_API_KEY: key,
  });
  const json = (s: string) => JSON.parse(s) as any;

  it('creates an endpoint (the secret printed once), lists it, receives a signed top-up, shows the delivery log, pings, rotates, redelivers and deletes', async () => {
    const e = env(alice.key);
    const made = await runFarebox(['webhooks', 'create', hookUrl, '--events', 'topup.completed,settlement.released'], { env: e });
    expect(made.code, made.stderr).toBe(0);
    const secret = made.stdout.split('\n')[0]!;
    expect(secret).toMatch(/^whsec_/);
    expect(made.stdout).toContain('This is the only time the secret is shown');
    const [hook] = json((await runFarebox(['webhooks', 'list', '--json'], { env: e })).stdout) as Array<{ id: string; events: string[] }>;
    expect(hook).toMatchObject({ events: ['topup.completed', 'settlement.released'], secret_prefix: secret.slice(0, 10) });
    expect((await runFarebox(['webhooks'], { env: e })).stdout).toMatch(
      new RegExp(`^${hook!.id}\\s+${hookUrl.replace(/[.]/g, '\\.')}\\s+topup\\.completed,settlement\\.released\\s+whsec_`, 'm'),
    );

    expect((await runFarebox(['topup', '2'], { env: e })).code).toBe(0);
    const got = await eventually('the top-up event arrives', () => received[0]);
    expect((await verifyWebhook({ payload: got.body, signature: got.headers['farebox-signature'] as string, secret })).ok).toBe(true);
    const log = await eventually('the delivery shows delivered', async () => {
      const r = await runFarebox(['webhooks', 'deliveries', hook!.id], { env: e });
      return /topup\.completed evt_\S+\s+delivered\s+1\s+status 200/.test(r.stdout) ? r.stdout : undefined;
    });
    expect(log).toMatch(/^DELIVERY\s+EVENT\s+STATE\s+ATTEMPTS\s+LAST\s+NEXT\s+CREATED/m);

    const ping = await runFarebox(['webhooks', 'ping', hook!.id], { env: e });
    expect(ping.stdout).toContain(`Sent webhook.ping`);
    await eventually('the ping arrives', () => received.length === 2);

    const rotated = await runFarebox(['webhooks', 'rotate', hook!.id, '--keep-previous', '2'], { env: e });
    expect(rotated.code, rotated.stderr).toBe(0);
    const next = rotated.stdout.split('\n')[0]!;
    expect(next).toMatch(/^whsec_/);
    expect(rotated.stdout).toMatch(/the previous secret signs too until \d{4}-/);

    const first = (
      json((await runFarebox(['webhooks', 'deliveries', hook!.id, '--json'], { env: e })).stdout) as Array<{ id: string; event_type: string }>
    ).find((d) => d.event_type === 'topup.completed')!;
    const again = await runFarebox(['webhooks', 'redeliver', hook!.id, first.id], { env: e });
    expect(again.stdout).toContain('Sending topup.completed');
    const resent = await eventually('the redelivery arrives', () => received[2]);
    expect(resent.body).toBe(got.body);
    // Signed with the new secret and, for two hours, the previous one too.
    expect((await verifyWebhook({ payload: resent.body, signature: resent.headers['farebox-signature'] as string, secret: next })).ok).toBe(true);
    expect((await verifyWebhook({ payload: resent.body, signature: resent.headers['farebox-signature'] as string, secret })).ok).toBe(true);

    expect((await runFarebox(['webhooks', 'delete', hook!.id], { env: e })).stdout).toContain(`Deleted webhook ${hook!.id}`);
    expect((await runFarebox(['webhooks'], { env: e })).stdout).toContain('No webhook endpoints.');
  });

  it("refuses unknown event types before any request, and a spend key with the gateway's reason", async () => {
    const e = env(alice.key);
    const bad = await runFarebox(['webhooks', 'create', hookUrl, '--events', 'topup.done'], { env: e });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unknown event type: topup.done (one of topup.completed, settlement.released');
    const none = await runFarebox(['webhooks', 'create', hookUrl], { env: e });
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('--events required')]);
    const spend = json((await runFarebox(['keys', 'create', 'reader', '--spend-only', '--json'], { env: e })).stdout).key as string;
    const refused = await runFarebox(['webhooks', 'create', hookUrl, '--events', 'all'], { env: env(spend) });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('this is a spend key');
    const privateUrl = await runFarebox(['webhooks', 'create', 'https://10.1.2.3/hooks', '--events', 'all'], { env: e });
    expect([privateUrl.code, privateUrl.stderr]).toEqual([1, expect.stringContaining('url resolves to a private or reserved address')]);
    expect(json((await runFarebox(['webhooks', 'list', '--json'], { env: e })).stdout)).toEqual([]);
  });
});
