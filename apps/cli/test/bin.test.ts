import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, farebox } from './bin.js';

// The built binary, for what only it can show: its entry point (bin, shebang,
// process.exitCode), exit codes, stdin and stdout. Behaviour is tested in
// process (runCli, run*()); the end-to-end suites against a gateway are in e2e/.
describe('the built farebox binary', () => {
  let env: Record<string, string>;

  beforeAll(async () => {
    // Rebuilds the CLI and every workspace package it loads whose build is older than its sources.
    ensureBuilt();
    const home = await mkdtemp(join(tmpdir(), 'farebox-bin-'));
    // Nothing listens on port 9: a command that reaches the gateway fails to connect.
    env = {
      PATH: process.env.PATH ?? '',
      HOME: home,
      FAREBOX_CONFIG_DIR: join(home, 'farebox'),
      FAREBOX_URL: 'http://127.0.0.1:9',
      FAREBOX_API_KEY: 'sk_live_unused',
      BROWSER: 'none',
    };
  }, 600_000);

  it('prints help and its version on stdout and exits 0', async () => {
    const help = await farebox(['--help'], { env });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: farebox');
    expect(help.stderr).toBe('');
    const version = await farebox(['--version'], { env });
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('exits 2 on bad usage, with the reason on stderr and nothing on stdout', async () => {
    const unknown = await farebox(['frobnicate'], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
  });

  it('reads the payload from stdin, and refuses one that is not a JSON object before sending anything (exit 2)', async () => {
    const bad = await farebox(['call', 'echo', '--json'], { env, input: '{nope' });
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe('');
    expect(JSON.parse(bad.stderr)).toMatchObject({ code: 'USAGE', error: expect.stringContaining('stdin is not valid JSON') });
    const list = await farebox(['call', 'echo'], { env, input: '[1,2]' });
    expect(list.code).toBe(2);
    expect(list.stderr).toMatch(/^farebox: stdin must be a JSON object/m);
  });

  it('exits 1 when the gateway cannot be reached, saying so on stderr', async () => {
    const r = await farebox(['balance'], { env });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^farebox: /m);
  });
});
