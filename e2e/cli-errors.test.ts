import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliMessage } from '@farebox/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFarebox, type RunResult } from './cli.js';
import { publishDownService, startStack, type Stack, type StackUser } from './stack.js';

// What `farebox` prints when things go wrong, against a running local stack:
// the command to run (never an HTTP route), what happened to the money, and
// the gateway's request id with every error the gateway answered.
describe('farebox error messages', () => {
  let h: Stack;
  let alice: StackUser;
  let tmp: string;
  let n = 0;
  /** Every output of every run in this file: none may name an HTTP route. */
  const outputs: Array<{ args: string[]; text: string }> = [];
  const REQUEST_ID = '[0-9a-f-]{36}';

  async function env(extra: Record<string, string> = {}) {
    const dir = await mkdtemp(join(tmp, `cfg${n++}-`));
    return { PATH: process.env.PATH ?? '', HOME: dir, FAREBOX_CONFIG_DIR: join(dir, 'farebox'), FAREBOX_URL: h.url, BROWSER: 'none', ...extra };
  }
  async function farebox(args: string[], e: Record<string, string>): Promise<RunResult> {
    const r = await runFarebox(args, { env: e });
    outputs.push({ args, text: `${r.stdout}${r.stderr}` });
    return r;
  }

  beforeAll(async () => {
    h = await startStack();
    await h.publish('echo', '0.01');
    alice = await h.user();
    tmp = await mkdtemp(join(tmpdir(), 'farebox-cli-errors-'));
    // A service whose endpoint refuses connections.
    await publishDownService(h);
  }, 240_000);

  afterAll(async () => {
    await h?.close();
  });

  it('says the command that activates publishing, not its HTTP route', async () => {
    const e = await env({ FAREBOX_API_KEY: alice.key });
    const r = await farebox(['publisher', 'register', '--service', 'mine', '--price', '0.01', '--endpoint', 'https://example.com/', '--description', 'd'], e);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^farebox: activate publishing first: farebox publisher activate <name> \\(HTTP 403, request id ${REQUEST_ID}\\)\\n$`));
    const json = await farebox(['publisher', 'overview', '--json'], e);
    expect(JSON.parse(json.stderr)).toMatchObject({
      error: 'activate publishing first: farebox publisher activate <name>',
      status: 403,
      requestId: expect.stringMatching(new RegExp(`^${REQUEST_ID}$`)),
    });
  });

  it('says a failed call was refunded, with the exact amount and the request id, and the credits are untouched', async () => {
    const e = await env({ FAREBOX_API_KEY: alice.key });
    const before = JSON.parse((await farebox(['balance', '--json'], e)).stdout).balance_base_units as number;
    const r = await farebox(['call', 'down', '{}'], e);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^farebox: service unreachable: connection refused \\(ECONNREFUSED\\); the 0\\.001 USD charge was refunded to your credits \\(HTTP 500, request id ${REQUEST_ID}\\)\\n$`,
      ),
    );
    const json = JSON.parse((await farebox(['call', 'down', '{}', '--json'], e)).stderr);
    expect(json).toMatchObject({ error: expect.stringMatching(/; the 0\.001 USD charge was refunded to your credits$/), status: 500 });
    expect(JSON.parse((await farebox(['balance', '--json'], e)).stdout).balance_base_units).toBe(before);
  });

  it("says a service is another publisher's, without naming the owner", async () => {
    const bob = await h.user();
    const e = await env({ FAREBOX_API_KEY: bob.key });
    expect((await farebox(['publisher', 'activate', 'Bob Labs'], e)).code).toBe(0);
    const r = await farebox(['publisher', 'update', 'echo', '--description', 'mine now'], e);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^farebox: service echo belongs to another publisher \\(HTTP 403, request id ${REQUEST_ID}\\)\\n$`));
    const removed = await farebox(['publisher', 'remove', 'echo'], e);
    expect(removed.stderr).toContain('service echo belongs to another publisher');
  });

  it('says the gateway did not answer, and how to start or name one, when nothing listens at its address', async () => {
    const e = await env({ FAREBOX_API_KEY: alice.key, FAREBOX_URL: 'http://127.0.0.1:9' });
    const r = await farebox(['balance'], e);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      // With the request id it was sent with, as every error has (the gateway's log lines carry it, had it got there).
      /^farebox: cannot reach the gateway at http:\/\/127\.0\.0\.1:9: .+ \(is it running\? `farebox dev` starts a local one; --url or FAREBOX_URL names another\) \(request id [0-9a-f-]{36}\)\n$/,
    );
  });

  it('turns every route of the served contract into a command or nothing, in every form a message names it', async () => {
    const doc = (await (await fetch(`${h.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { description?: string }> }>>;
    };
    const texts: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const route = `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`;
        const concrete = route.replace(/:(\w+)/g, 'x1');
        texts.push(`do this first (${route})`, `do this first (${concrete})`, `${concrete} failed: fetch failed`, `${concrete} takes a JSON body`);
        for (const r of Object.values(op.responses)) if (r.description) texts.push(r.description);
      }
    }
    for (const t of texts) expect(cliMessage(t, h.url), t).not.toMatch(/\b(GET|POST|PUT|DELETE|PATCH) \//);
  });

  it('printed no HTTP route in any output above', () => {
    expect(outputs.length).toBeGreaterThan(8);
    const offenders = outputs.filter((o) => /\b(GET|POST|PUT|DELETE|PATCH) \//.test(o.text));
    expect(offenders).toEqual([]);
  });
});
