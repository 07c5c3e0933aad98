import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { loadWorkspaces, manifestDeps, parseDependencies, parseLayers, repoRoot } from './dependency-rule.js';

// docs/architecture.md draws the dependencies of every workspace (its
// ```dependencies block) and the layers they keep to (its ```layers block):
// both must say what the manifests say.
const doc = readFileSync(join(repoRoot, 'docs', 'architecture.md'), 'utf8');
const workspaces = loadWorkspaces(repoRoot);
const sorted = (names: string[]) => [...names].sort();

it("the dependencies block of docs/architecture.md is every workspace's manifest, edge for edge", () => {
  const drawn = parseDependencies(doc);
  const wrong: string[] = [];
  for (const w of workspaces) {
    const said = drawn.get(w.short);
    if (!said) {
      wrong.push(`${w.short}: missing from the block (add a line for ${w.dir})`);
      continue;
    }
    const real = manifestDeps(w);
    for (const kind of ['run', 'peer', 'dev'] as const) {
      const label = { run: '──►', peer: 'peer', dev: 'dev' }[kind];
      if (sorted(said[kind]).join() !== sorted(real[kind]).join())
        wrong.push(`${w.short} (${label}): the doc says [${sorted(said[kind]).join(', ')}], ${w.dir}/package.json [${sorted(real[kind]).join(', ')}]`);
    }
  }
  for (const name of drawn.keys()) if (!workspaces.some((w) => w.short === name)) wrong.push(`${name}: in the block, but no workspace has that name`);
  expect(wrong).toEqual([]);
});

it('the layers block places every workspace once, and names no other', () => {
  const layers = parseLayers(doc);
  const placed = [...layers.layer.keys(), ...layers.beside];
  expect(sorted(placed)).toEqual(sorted(workspaces.map((w) => w.short)));
  for (const exception of layers.exceptions) {
    const [from, to] = exception.split(' -> ');
    expect(workspaces.find((w) => w.short === from)?.deps.dependencies, `the exception ${exception} is a dependency of the manifest`).toContain(to);
  }
});

// Issue 47: the gateway's host carries bytes; the policy is @farebox/gateway-http's. A route, a credential
// check, a rate limit or an error answer written in apps/gateway/src is a second door to the same money.
it('apps/gateway/src holds no policy: no route, credential, limit or error answer of its own', () => {
  const dir = join(repoRoot, 'apps', 'gateway', 'src');
  const policy =
    /\b(enforceRateLimit|checkAccess|authenticateBearer|fromSession|createApiHandlers|errorAnswer|HTTP_STATUS|GatewayError|core\.calls|core\.oauth|core\.accounts)\b|\b(app|router)\.(get|post|put|patch|delete|all)\(/;
  const found: string[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    readFileSync(join(dir, name), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (policy.test(line)) found.push(`apps/gateway/src/${name}:${i + 1}: ${line.trim()}`);
      });
  }
  expect(found).toEqual([]);
});
