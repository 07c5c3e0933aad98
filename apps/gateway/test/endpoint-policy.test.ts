// The metrics listener (FAREBOX_METRICS_ADDR) is the host's: its port is the
// gateway's too. The rest of the endpoint policy is tested in process:
// packages/gateway-http/test/endpoint-policy.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import { freePort } from './process-kit.js';

async function publisher(h: Harness) {
  const pub = await h.user();
  expect((await pub.api('/v1/publisher/activate', { body: { name: 'Edge Co' } })).status).toBe(200);
  return pub;
}

describe('a gateway that allows loopback endpoints (the local stack)', () => {
  let h: Harness;
  let metricsPort: number;
  beforeAll(async () => {
    metricsPort = await freePort();
    h = await startHarness('pglite', { metricsAddress: `127.0.0.1:${metricsPort}` });
  }, 60_000);
  afterAll(() => h?.close());

  it('refuses the port of its metrics listener (FAREBOX_METRICS_ADDR answers without a token)', async () => {
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
    const pub = await publisher(h);
    for (const host of ['127.0.0.1', 'localhost']) {
      const r = await pub.api('/v1/agents', {
        body: { service: 'scrape', pricePerCallLamports: 1000, endpoint: `http://${host}:${metricsPort}/metrics`, description: 'metrics' },
      });
      expect(r, host).toMatchObject({ status: 400, body: { error: 'endpoint is the gateway itself' } });
    }
    expect((await pub.api('/v1/agents/mine')).body).toEqual([]);
  });
});
