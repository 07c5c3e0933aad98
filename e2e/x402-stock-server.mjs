// A stock x402 resource server, unmodified: express with @x402/express's paymentMiddleware (2.9, the line @x402/stellar 2.9's server scheme fits), @x402/core's
// x402ResourceServer and HTTPFacilitatorClient pointed at a facilitator, and @x402/stellar's exact scheme. Run by
// x402-stock-server.test.ts in its own process: it prints its URL, then serves until killed.
//
//   X402_FACILITATOR_URL=<gateway>/x402 X402_PAY_TO=G... X402_ASSET=C... X402_AMOUNT=100000 node x402-stock-server.mjs
import { createRequire } from 'node:module';
import express from 'express';
import { paymentMiddleware } from '@x402/express';
import { ExactStellarScheme } from '@x402/stellar/exact/server';

// The @x402/core that @x402/express itself runs on (this folder's own @x402/core is the client's newer line).
const require = createRequire(import.meta.url);
const { HTTPFacilitatorClient, x402ResourceServer } = createRequire(require.resolve('@x402/express'))('@x402/core/server');

const { X402_FACILITATOR_URL: facilitatorUrl, X402_PAY_TO: payTo, X402_ASSET: asset, X402_AMOUNT: amount, X402_SERVICE: service } = process.env;
if (!facilitatorUrl || !payTo || !asset || !amount) {
  console.error('usage: X402_FACILITATOR_URL=... X402_PAY_TO=... X402_ASSET=... X402_AMOUNT=... node x402-stock-server.mjs');
  process.exit(2);
}

const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorUrl })).register('stellar:testnet', new ExactStellarScheme());
const app = express();
app.use(express.json());
app.use(
  paymentMiddleware(
    {
      'POST /forecast': {
        accepts: { scheme: 'exact', network: 'stellar:testnet', payTo, price: { amount, asset }, ...(service ? { extra: { service } } : {}) },
        description: 'a forecast',
        mimeType: 'application/json',
      },
    },
    server,
  ),
);
app.post('/forecast', (_req, res) => res.json({ forecast: 'sunny' }));
const listening = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ url: `http://127.0.0.1:${listening.address().port}` })));
