import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import * as client from '@farebox/client';
import * as provider from '@farebox/provider';
import { expect, it } from 'vitest';
import * as sdk from '../src/index.js';

it('re-exports every runtime export of @farebox/provider and @farebox/client, and nothing else', () => {
  // The webhook helpers are in both (the same objects, @farebox/protocol's): once here.
  const expected = [...new Set([...Object.keys(provider), ...Object.keys(client)])].sort();
  expect(Object.keys(sdk).sort()).toEqual(expected);
});

it('re-exports the same objects, not copies', () => {
  expect(sdk.createProvider).toBe(provider.createProvider);
  expect(sdk.createClient).toBe(client.createClient);
  expect(sdk.EndpointVerificationError).toBe(client.EndpointVerificationError);
  expect(sdk.verifyWebhook).toBe(provider.verifyWebhook);
  expect(client.verifyWebhook).toBe(provider.verifyWebhook);
});

/** Every exported name (values and types) of a module, as the TypeScript checker sees it. */
function exportedNames(files: string[]): Map<string, string[]> {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    customConditions: ['@farebox/source'],
    baseUrl: root,
  });
  const checker = program.getTypeChecker();
  const out = new Map<string, string[]>();
  for (const file of files) {
    const source = program.getSourceFile(file);
    if (!source) throw new Error(`not in the program: ${file}`);
    const symbol = checker.getSymbolAtLocation(source);
    if (!symbol) throw new Error(`not a module: ${file}`);
    out.set(
      file,
      checker
        .getExportsOfModule(symbol)
        .map((s) => s.getName())
        .sort(),
    );
  }
  return out;
}

it('re-exports every public name and type of @farebox/provider and @farebox/client', () => {
  const at = (p: string) => fileURLToPath(new URL(p, import.meta.url));
  const files = [at('../src/index.ts'), at('../../provider/src/index.ts'), at('../../client/src/index.ts')];
  const names = exportedNames(files);
  const sdkNames = new Set(names.get(files[0]!));
  const missing = [...names.get(files[1]!)!, ...names.get(files[2]!)!].filter((n) => !sdkNames.has(n));
  expect(missing).toEqual([]);
  // The types callers name most, pinned by name as well.
  for (const name of ['DisputeResult', 'GatewayClient', 'Provider', 'FareboxClient']) expect(sdkNames).toContain(name);
}, 60_000);
