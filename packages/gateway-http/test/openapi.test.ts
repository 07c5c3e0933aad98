import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Validator } from '@seriousme/openapi-schema-validator';
import { validate as validateDiscovery } from 'mppx/discovery';
import openapiTS, { astToString } from 'openapi-typescript';
import { describe, expect, it } from 'vitest';
import { openApiPath, operationList } from '@farebox/contract';
import { openApiDocument } from '../src/index.js';

const DOC_PATH = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 (checked by @seriousme/openapi-schema-validator)', async () => {
    const result = await new Validator().validate(openApiDocument({ serverUrl: 'https://farebox.example' }) as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('is found by MPP clients (draft-payment-discovery-00): x-service-info, and the channel offer of POST /v1/call when MPP is on', async () => {
    const currency = 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA';
    type Op = { 'x-payment-info'?: unknown; security: unknown[]; responses: Record<string, { description: string; headers?: object; content?: object }> };
    const on = openApiDocument({ serverUrl: 'https://farebox.example', mpp: { currency } }) as { paths: Record<string, Record<string, Op>> } & Record<
      string,
      unknown
    >;
    expect(on['x-service-info']).toEqual({
      categories: ['developer-tools'],
      docs: { homepage: 'https://farebox.example', apiReference: 'https://farebox.example/openapi.json' },
    });
    const call = on.paths['/v1/call']!.post!;
    expect(call['x-payment-info']).toEqual({
      offers: [{ intent: 'session', method: 'stellar', amount: null, currency, description: expect.stringContaining('intent channel') }],
    });
    // The 402: the refusals of credits and MPP's challenge (WWW-Authenticate, application/problem+json).
    expect(call.responses['402']).toMatchObject({ description: expect.stringMatching(/^Payment Required: insufficient balance.*MPP/) });
    expect(Object.keys(call.responses['402']!.content!)).toEqual(['application/json', 'application/problem+json']);
    expect(call.responses['402']!.headers).toHaveProperty('WWW-Authenticate');
    // No credential is one way in (the channel pays).
    expect(call.security).toContainEqual({});
    // Only the call is payable.
    const payable = Object.entries(on.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, o]) => o['x-payment-info'])
        .map(([m]) => `${m} ${path}`),
    );
    expect(payable).toEqual(['post /v1/call']);
    // Valid OpenAPI 3.1 still, and a discovery document mppx's validator finds nothing wrong with (amount null: dynamic pricing).
    const result = await new Validator().validate(on as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(validateDiscovery(on)).toEqual([]);
    // Without MPP: the service info, no offer, the 402 of credits alone.
    const off = openApiDocument({ serverUrl: 'https://farebox.example' }) as typeof on;
    expect(off['x-service-info']).toEqual(on['x-service-info']);
    expect(off.paths['/v1/call']!.post!['x-payment-info']).toBeUndefined();
    expect(Object.keys(off.paths['/v1/call']!.post!.responses['402']!.content!)).toEqual(['application/json']);
    expect(validateDiscovery(off)).toEqual([]);
  });

  it('has one operation per entry of the contract table, with its id, method and path', () => {
    const doc = openApiDocument() as { paths: Record<string, Record<string, { operationId: string }>> };
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, o]) => `${method.toUpperCase()} ${path} ${o.operationId}`),
    );
    expect(documented.sort()).toEqual(operationList.map((o) => `${o.method} ${openApiPath(o.path)} ${o.id}`).sort());
    expect(documented.length).toBeGreaterThanOrEqual(38);
  });

  it('is checked in as docs/openapi.json, up to date (regenerate: pnpm --filter @farebox/gateway openapi)', async () => {
    const stored = JSON.parse(await readFile(DOC_PATH, 'utf8'));
    expect(stored).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });

  it('gives openapi-typescript types that compile and carry the response fields', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-openapi-ts-'));
    const types = astToString(await openapiTS(JSON.parse(await readFile(DOC_PATH, 'utf8'))));
    await writeFile(join(dir, 'api.d.ts'), types);
    // A program written against the generated types: it compiles only if the document describes these fields.
    await writeFile(
      join(dir, 'use.ts'),
      `import type { paths, components } from './api.js';
type Balance = paths['/v1/balance']['get']['responses'][200]['content']['application/json'];
const b: Balance = {} as Balance;
const credits: number = b.balance_base_units;
const status: 'ok' | 'provisioning' | 'unavailable' = b.wallet_status;
type CallBody = paths['/v1/call']['post']['requestBody']['content']['application/json'];
const body: CallBody = { service: 'echo', payload: { text: 'hi' } };
type Topup = components['schemas']['TopupResult'];
const t: Topup['topup']['type'] = 'topup';
type Manifest = paths['/v1/agents/{service}/manifest']['get'];
const p: Manifest['parameters']['path'] = { service: 'echo' };
// @ts-expect-error a field the document does not have
const missing = b.no_such_field;
export { credits, status, body, t, p, missing };
`,
    );
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', skipLibCheck: false, types: [] },
        files: ['use.ts'],
      }),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const run = await promisify(execFile)(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')]).then(
      () => ({ code: 0, out: '' }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: `${e.stdout}${e.stderr}` }),
    );
    expect(run).toEqual({ code: 0, out: '' });
  }, 60_000);
});
