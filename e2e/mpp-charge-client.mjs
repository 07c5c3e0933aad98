// A Stellar MPP `charge` client written from the drafts (draft-httpauth-payment-00, draft-stellar-charge-00), of stock
// code only: mppx 0.11 reads the challenge and writes the credential, @stellar/stellar-sdk builds and signs the
// SEP-41 transfer (pull mode, fees sponsored: an all-zero source, the payer signs its auth entry only).
// argv: <mode: pay | push | hash> <endpoint> <json body>; env: MPP_SECRET (S...), MPP_RPC_URL, MPP_PASSPHRASE.
import sdk from '@stellar/stellar-sdk';
import { Challenge, Credential, Receipt } from 'mppx';

const { contract, Keypair, nativeToScVal, rpc } = sdk;
const { basicNodeSigner } = contract;

const [mode, endpoint, bodyText] = process.argv.slice(2);
const payer = Keypair.fromSecret(process.env.MPP_SECRET);
const rpcUrl = process.env.MPP_RPC_URL;
const passphrase = process.env.MPP_PASSPHRASE;
const post = (headers = {}) => fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: bodyText });

const unpaid = await post();
const challenge = Challenge.fromResponseList(unpaid).find((c) => c.method === 'stellar' && c.intent === 'charge');
if (!challenge) throw new Error(`no stellar charge challenge in the ${unpaid.status} answer`);
const { amount, currency, recipient, methodDetails } = challenge.request;
let payload;
if (mode === 'hash') {
  // Push mode: the draft's `hash` credential (what a payer that submitted the transfer itself sends).
  payload = { type: 'hash', hash: '00'.repeat(32) };
} else {
  const tx = await contract.AssembledTransaction.build({
    contractId: currency,
    method: 'transfer',
    args: [
      nativeToScVal(payer.publicKey(), { type: 'address' }),
      nativeToScVal(recipient, { type: 'address' }),
      nativeToScVal(BigInt(amount), { type: 'i128' }),
    ],
    networkPassphrase: passphrase,
    rpcUrl,
    allowHttp: true,
    parseResultXdr: (r) => r,
  });
  const latest = (await new rpc.Server(rpcUrl, { allowHttp: true }).getLatestLedger()).sequence;
  const expiresSeconds = Math.max(1, (Date.parse(challenge.expires) - Date.now()) / 1000);
  await tx.signAuthEntries({
    address: payer.publicKey(),
    signAuthEntry: basicNodeSigner(payer, passphrase).signAuthEntry,
    expiration: latest + Math.ceil(expiresSeconds / 5),
  });
  payload = { type: 'transaction', transaction: tx.built.toXDR() };
}
const credential = Credential.serialize({ challenge, payload, source: `did:pkh:${methodDetails.network}:${payer.publicKey()}` });
const paid = await post({ authorization: credential });
const receiptHeader = paid.headers.get('payment-receipt');
process.stdout.write(
  `${JSON.stringify({
    challenge: { request: challenge.request, status: unpaid.status },
    status: paid.status,
    receipt: receiptHeader ? Receipt.deserialize(receiptHeader) : null,
    body: await paid.json(),
  })}\n`,
);
