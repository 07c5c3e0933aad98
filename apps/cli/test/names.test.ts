import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli } from './run.js';

// The service-name policy of @farebox/protocol, as `farebox` applies it (in process: runCli) before anything is written or sent.
const INVALID = 'invalid service name: use 1 to 32 lower-case letters, digits and single hyphens, starting and ending with a letter or digit';

describe('farebox and service names', () => {
  let tmp: string;
  const env = () => ({
    PATH: process.env.PATH ?? '',
    HOME: tmp,
    FAREBOX_CONFIG_DIR: join(tmp, 'farebox'),
    FAREBOX_URL: 'http://127.0.0.1:9',
    FAREBOX_API_KEY: 'sk_live_unused',
    BROWSER: 'none',
  });

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'farebox-cli-names-'));
  });

  it('init makes a valid name of any folder name, and refuses a --name that breaks the policy', async () => {
    const made = await cli(['init', join(tmp, 'My_Cool..Service--v2-'), '--json'], { env: env() });
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ service: 'my-cool-service-v2' });
    expect(await readFile(join(tmp, 'My_Cool..Service--v2-', 'src', 'index.ts'), 'utf8')).toContain("service: 'my-cool-service-v2'");

    for (const name of ['Echo', 'echo--2', 'echo-', '-echo', 'my_svc', '\u0435cho']) {
      const r = await cli(['init', join(tmp, `refused-${name.charCodeAt(0)}-${name.length}`), '--name', name], { env: env() });
      expect(r.code, name).toBe(2);
      expect(r.stderr, name).toContain(`${INVALID} (got ${JSON.stringify(name)}; use --name)`);
    }
  });

  it('publisher register refuses such a name before it contacts the gateway', async () => {
    for (const name of ['ECHO', 'echo ', 'echo\u200b', 'a.b']) {
      const r = await cli(['publisher', 'register', '--service', name, '--price', '0.01', '--endpoint', 'https://example.com/x', '--description', 'd'], {
        env: env(),
      });
      expect(r.code, name).toBe(2);
      expect(r.stderr, name).toContain(`--service ${JSON.stringify(name)}: ${INVALID}`);
    }
  });
});
