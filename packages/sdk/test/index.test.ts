import * as client from '@farebox/client';
import * as provider from '@farebox/provider';
import { expect, it } from 'vitest';
import * as sdk from '../src/index.js';

it('re-exports every runtime export of @farebox/provider and @farebox/client, and nothing else', () => {
  const expected = [...Object.keys(provider), ...Object.keys(client)].sort();
  expect(Object.keys(sdk).sort()).toEqual(expected);
});

it('re-exports the same objects, not copies', () => {
  expect(sdk.createProvider).toBe(provider.createProvider);
  expect(sdk.createClient).toBe(client.createClient);
  expect(sdk.EndpointVerificationError).toBe(client.EndpointVerificationError);
});
