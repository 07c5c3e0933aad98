import { describe, expect, it, vi } from 'vitest';
import type * as protocol from '../src/index.js';
import { signWebhookPayload, verifyWebhook } from '../src/index.js';

// A receiver's view of the signature: what it accepts and what it refuses.
const BODY = '{"id":"evt_1","type":"topup.completed","created_at":"2023-11-14T22:13:20.000Z","data":{"amount_usd":12.5}}';
const SECRET = 'whsec_test_secret';
const T = 1_700_000_000;
// `printf '%s' "$T.$BODY" | openssl dgst -sha256 -hmac whsec_test_secret`: any HMAC-SHA256 implementation agrees.
const VECTOR = '14392d3c8be8eee9a805f5cc37dc5afb0528976a3d54b411ffae72b3babecca7';
const at = (seconds: number) => () => seconds * 1000;

describe('webhook signatures', () => {
  it('signs t=<unix>,v1=<HMAC-SHA256 of "<t>.<body>"> as any HMAC implementation computes it', async () => {
    expect(await signWebhookPayload(SECRET, BODY, T)).toBe(`t=${T},v1=${VECTOR}`);
    expect(await signWebhookPayload(SECRET, new TextEncoder().encode(BODY), T)).toBe(`t=${T},v1=${VECTOR}`);
  });

  it('accepts the raw body (text or bytes) within 5 minutes either way and answers the event', async () => {
    const signature = `t=${T},v1=${VECTOR}`;
    for (const now of [T, T + 300, T - 300]) {
      const v = await verifyWebhook({ payload: BODY, signature, secret: SECRET, now: at(now) });
      expect(v).toEqual({ ok: true, timestamp: T, event: JSON.parse(BODY) });
    }
    const bytes = await verifyWebhook({ payload: Buffer.from(BODY), signature, secret: SECRET, now: at(T) });
    expect(bytes.ok).toBe(true);
  });

  it('refuses a replay outside the window, a changed body, a wrong secret, and a missing or malformed header', async () => {
    const signature = `t=${T},v1=${VECTOR}`;
    const verdict = (o: Partial<Parameters<typeof verifyWebhook>[0]>) => verifyWebhook({ payload: BODY, signature, secret: SECRET, now: at(T), ...o });
    expect(await verdict({ now: at(T + 301) })).toMatchObject({ ok: false, reason: 'timestamp_outside_tolerance' });
    expect(await verdict({ now: at(T - 301) })).toMatchObject({ ok: false, reason: 'timestamp_outside_tolerance' });
    expect(await verdict({ now: at(T + 3600), toleranceSeconds: 3600 })).toMatchObject({ ok: true });
    expect(await verdict({ payload: BODY.replace('12.5', '125') })).toEqual({
      ok: false,
      reason: 'signature_mismatch',
      message: 'no signature matches the secret: a wrong secret, or a body changed on the way (verify the raw body)',
    });
    // The body parsed and written again is another body.
    expect(await verdict({ payload: JSON.stringify(JSON.parse(BODY), null, 1) })).toMatchObject({ reason: 'signature_mismatch' });
    expect(await verdict({ secret: 'whsec_other' })).toMatchObject({ reason: 'signature_mismatch' });
    expect(await verdict({ signature: undefined })).toEqual({ ok: false, reason: 'missing_signature', message: 'no Farebox-Signature header' });
    for (const bad of ['v1=abc', `t=${T}`, `t=soon,v1=${VECTOR}`, `t=${T},v1=${VECTOR.slice(1)}`])
      expect(await verdict({ signature: bad }), bad).toMatchObject({ ok: false, reason: 'malformed_signature' });
  });

  it('accepts either secret while one is rotated: a header with two signatures, a receiver with two secrets', async () => {
    const both = await signWebhookPayload(['whsec_new', SECRET], BODY, T);
    expect(both.split(',')).toHaveLength(3);
    expect((await verifyWebhook({ payload: BODY, signature: both, secret: SECRET, now: at(T) })).ok).toBe(true);
    expect((await verifyWebhook({ payload: BODY, signature: both, secret: 'whsec_new', now: at(T) })).ok).toBe(true);
    const old = `t=${T},v1=${VECTOR}`;
    expect((await verifyWebhook({ payload: BODY, signature: old, secret: ['whsec_new', SECRET], now: at(T) })).ok).toBe(true);
  });

  it('refuses a signed body that is not a Farebox event', async () => {
    const body = '[1,2]';
    const signature = await signWebhookPayload(SECRET, body, T);
    expect(await verifyWebhook({ payload: body, signature, secret: SECRET, now: at(T) })).toMatchObject({ ok: false, reason: 'invalid_payload' });
  });

  it('signs and verifies the same on an edge runtime (WebCrypto, no node:crypto)', async () => {
    const proc = process as { getBuiltinModule?: unknown };
    const saved = proc.getBuiltinModule;
    vi.resetModules();
    proc.getBuiltinModule = undefined;
    let edge: typeof protocol;
    try {
      edge = await import('../src/index.js');
    } finally {
      proc.getBuiltinModule = saved;
    }
    expect(await edge.signWebhookPayload(SECRET, BODY, T)).toBe(`t=${T},v1=${VECTOR}`);
    expect((await edge.verifyWebhook({ payload: BODY, signature: `t=${T},v1=${VECTOR}`, secret: SECRET, now: at(T) })).ok).toBe(true);
  });
});
