import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import * as protocol from '../src/index.js';

describe('public surface', () => {
  it('exports exactly these names', () => {
    expect(Object.keys(protocol).sort()).toMatchInlineSnapshot(`
      [
        "BASE_UNITS_PER_USDC",
        "BASE_UNIT_NAME",
        "CERTIFICATE_BATCH_MAX",
        "CERTIFICATE_HEADER",
        "CERTIFICATE_MAX_LIFETIME_SECONDS",
        "CERTIFICATE_MAX_PROOF_STEPS",
        "CERTIFICATE_NONCE_BYTES",
        "CERTIFICATE_TTL_SECONDS",
        "CERTIFICATE_VERSIONS",
        "CERTIFICATE_VERSIONS_HEADER",
        "CLOCK_TOLERANCE_SECONDS",
        "ConfigError",
        "ContractIdSchema",
        "DescriptionSchema",
        "ERRORS_DOC",
        "ESCROW_SCHEME",
        "EXACT_NETWORKS",
        "EXACT_REASONS",
        "EXACT_REFUND_MAX_SKEW_MS",
        "EXACT_SCHEME",
        "EndpointSchema",
        "FareboxError",
        "INVALID_SERVICE_NAME",
        "LIMITS",
        "MAX_BASE_UNITS",
        "MIN_PRICE_BASE_UNITS",
        "MPP_PROBLEM_BASE",
        "MPP_STELLAR_NETWORKS",
        "ManifestSchema",
        "MppError",
        "PAYMENT_RECEIPT_HEADER",
        "PAYMENT_SCHEME",
        "PLATFORM_FEE_BPS",
        "PLATFORM_FEE_PCT",
        "PRICE_BOUND_BASE_UNITS",
        "PRICE_EXAMPLE",
        "PUBLISHER_LINK_TTL_MS",
        "PublicKeySchema",
        "SERVICE_NAME_PATTERN",
        "SHARED_SETTINGS",
        "ServiceNameSchema",
        "USDC_DECIMALS",
        "WEBHOOK_EVENT_TYPES",
        "WEBHOOK_HEADERS",
        "WEBHOOK_SIGNATURE_HEADER",
        "WEBHOOK_TOLERANCE_SECONDS",
        "X402_HEADERS",
        "X402_NETWORKS",
        "amountFields",
        "base64Decode",
        "base64Encode",
        "base64UrlEncode",
        "buildPaymentRequired",
        "canonicalJson",
        "challengeId",
        "codePointLength",
        "costObject",
        "createCertificateSigner",
        "createEd25519Signer",
        "createPaymentChallenge",
        "decodePaymentRequest",
        "decodePaymentResponse",
        "decodeStrKey",
        "defineSettings",
        "displayText",
        "encodeExactPaymentHeader",
        "encodePaymentHeader",
        "encodePaymentRequest",
        "encodePaymentResponse",
        "encodeStrKey",
        "exactRefundMessage",
        "firstIssueMessage",
        "flagSetting",
        "formatAmount",
        "formatPaymentChallenge",
        "formatPaymentCredential",
        "formatPaymentReceipt",
        "hexEncode",
        "intSetting",
        "isOwnChallenge",
        "isValidServiceName",
        "isValidStrKey",
        "listSetting",
        "manifestUrl",
        "matchExactPayment",
        "mppProblem",
        "onWhenTrueSetting",
        "oneOfSetting",
        "parseAmount",
        "parseBaseUnits",
        "parseExactPaymentHeader",
        "parsePaymentChallenges",
        "parsePaymentCredential",
        "parsePaymentHeader",
        "parsePaymentReceipt",
        "parsePaymentRequired",
        "parsePrice",
        "parsePublisherLinkChallenge",
        "parseStellarVoucher",
        "paymentHeaderScheme",
        "printable",
        "publisherLinkChallenge",
        "randomBytes",
        "readSettings",
        "serviceNameProblem",
        "settingKind",
        "settingsSchema",
        "sha256",
        "signCallCertificate",
        "signCallCertificateBatch",
        "signPublisherLink",
        "signWebhookPayload",
        "splitFee",
        "stellarDid",
        "textProblem",
        "textSetting",
        "timingSafeEqualBytes",
        "toJsonInteger",
        "toUsd",
        "unsafeTextIn",
        "urlSetting",
        "verifyCallCertificate",
        "verifyEd25519",
        "verifyWebhook",
      ]
    `);
  });
});

describe('edge runtimes (no node:crypto)', () => {
  it('signs and verifies the test vectors through WebCrypto alone', async () => {
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
    const file = JSON.parse(readFileSync(new URL('./vectors/call-certificates.json', import.meta.url), 'utf8'));
    for (const v of file.vectors) {
      const verdict = await edge.verifyCallCertificate(v.header, { body: v.body, service: v.service, platformPublicKey: file.platformPublicKey, now: v.now });
      expect(verdict.ok, v.name).toBe(v.expect.ok);
    }
    const signer = await edge.createCertificateSigner(file.platformSecretSeed);
    expect(signer.publicKey).toBe(file.platformPublicKey);
    const good = file.vectors[0];
    const again = await edge.signCallCertificate(
      { service: 'echo', body: good.body, amount: 100_000n, callId: 'call_0001', now: good.now, nonce: 'AAECAwQFBgcICQoLDA0ODw' },
      signer,
    );
    expect(again.header).toBe(good.header);
    const v2 = file.vectors.find((x: { name: string }) => x.name === 'v2: a batch of one (empty proof)');
    const [batched] = await edge.signCallCertificateBatch(
      [{ service: 'echo', body: v2.body, amount: 100_000n, callId: 'call_0001', now: v2.now, nonce: 'AAECAwQFBgcICQoLDA0ODw' }],
      signer,
    );
    expect(batched!.header).toBe(v2.header);
  });
});
