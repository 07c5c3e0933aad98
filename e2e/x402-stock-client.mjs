// A stock x402 client on Stellar, unmodified: @x402/fetch's wrapFetchWithPayment
// with @x402/core's x402Client (2.27, with the spend controls a testnet payer sets)
// and @x402/stellar's ExactStellarScheme, signing with createEd25519Signer(secret, 'stellar:testnet'). Run by
// x402-exact.test.ts in its own process, with NODE_EXTRA_CA_CERTS trusting the
// https proxy in front of the devnet's RPC (the stock client refuses http).
//
//   X402_SECRET=S... X402_RPC_URL=https://... node x402-stock-client.mjs pay <url> <json body>
//     pays the 402 as wrapFetchWithPayment does; prints { status, body, paymentResponse, paymentSignature }
//     (paymentSignature: the PAYMENT-SIGNATURE header the client sent).
//   ... node x402-stock-client.mjs sign <url> <json body>
//     asks for the 402 and builds the PAYMENT-SIGNATURE header the client would send, without
//     sending it; prints { header, offer }. To forge a payment, X402_SIGN_AMOUNT / X402_SIGN_PAY_TO
//     change what the client is asked to sign, and X402_CLAIM_OFFER=1 puts the service's own offer
//     back into the payload's `accepted` (a transaction for another amount claiming the price).
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme } from '@x402/stellar/exact/client';

const [mode, url, body = '{}'] = process.argv.slice(2);
const secret = process.env.X402_SECRET;
const rpcUrl = process.env.X402_RPC_URL;
if (!['pay', 'sign'].includes(mode) || !url || !secret || !rpcUrl) {
  console.error('usage: X402_SECRET=S... X402_RPC_URL=https://... node x402-stock-client.mjs pay|sign <url> [json body]');
  process.exit(2);
}

// @x402/core 2.2x pays only default assets or those its spend controls allow; @x402/stellar 2.9 (the newest on the
// registry) declares no default asset, so a testnet payer allows testnet's USDC by its contract id, as here. The same
// entry works on the devnet under the testnet passphrase: its USDC is that contract (docs/devnet.md).
const TESTNET_USDC = 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA';
const client = new x402Client()
  .register('stellar:*', new ExactStellarScheme(createEd25519Signer(secret, 'stellar:testnet'), { url: rpcUrl }))
  .setSpendControls({ allowedAssets: [{ network: 'stellar:testnet', asset: TESTNET_USDC }] });
const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body };

if (mode === 'pay') {
  let paymentSignature = null;
  const seen = async (input, requestInit) => {
    const request = new Request(input, requestInit);
    paymentSignature = request.headers.get('PAYMENT-SIGNATURE') ?? paymentSignature;
    return fetch(request);
  };
  const res = await wrapFetchWithPayment(seen, client)(url, init);
  const text = await res.text();
  const receipt = res.headers.get('PAYMENT-RESPONSE');
  const required = res.headers.get('PAYMENT-REQUIRED');
  console.log(
    JSON.stringify({
      status: res.status,
      body: text ? JSON.parse(text) : null,
      paymentResponse: receipt ? decodePaymentResponseHeader(receipt) : null,
      // A refusal's PAYMENT-REQUIRED (its `error` is the reason a client sees).
      paymentRequired: required ? JSON.parse(Buffer.from(required, 'base64').toString('utf8')) : null,
      paymentSignature,
    }),
  );
} else {
  const http = new x402HTTPClient(client);
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status !== 402) throw new Error(`expected a 402 from ${url}, got ${res.status}: ${text}`);
  const required = http.getPaymentRequiredResponse((name) => res.headers.get(name), text ? JSON.parse(text) : undefined);
  const offer = required.accepts.find((a) => a.scheme === 'exact');
  if (!offer) throw new Error(`the 402 offers no exact payment: ${JSON.stringify(required.accepts)}`);
  const asked = {
    ...offer,
    ...(process.env.X402_SIGN_AMOUNT ? { amount: process.env.X402_SIGN_AMOUNT } : {}),
    ...(process.env.X402_SIGN_PAY_TO ? { payTo: process.env.X402_SIGN_PAY_TO } : {}),
  };
  const payload = await client.createPaymentPayload({ ...required, accepts: [asked] });
  if (process.env.X402_CLAIM_OFFER === '1') payload.accepted = offer;
  console.log(JSON.stringify({ header: http.encodePaymentSignatureHeader(payload)['PAYMENT-SIGNATURE'], offer }));
}
