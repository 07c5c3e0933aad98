export { FareboxError, ConfigError, ERRORS_DOC } from './errors.js';
export type { FareboxErrorCode } from './errors.js';
export {
  USDC_DECIMALS,
  BASE_UNITS_PER_USDC,
  BASE_UNIT_NAME,
  MAX_BASE_UNITS,
  parseAmount,
  parseBaseUnits,
  formatAmount,
  toUsd,
  toJsonInteger,
  amountFields,
  costObject,
} from './amounts.js';
export { PLATFORM_FEE_BPS, PLATFORM_FEE_PCT, MIN_PRICE_BASE_UNITS, splitFee } from './fee.js';
export type { FeeSplit } from './fee.js';
export { displayText } from './display.js';
export { encodeStrKey, decodeStrKey, isValidStrKey } from './strkey.js';
export type { StrKeyKind } from './strkey.js';
export { createEd25519Signer, verifyEd25519, sha256, randomBytes } from './crypto.js';
export type { Ed25519Signer } from './crypto.js';
export { base64Encode, base64Decode, base64UrlEncode, hexEncode, timingSafeEqualBytes } from './encoding.js';
export {
  CERTIFICATE_HEADER,
  CERTIFICATE_VERSIONS_HEADER,
  CERTIFICATE_VERSIONS,
  CERTIFICATE_BATCH_MAX,
  CERTIFICATE_MAX_PROOF_STEPS,
  CERTIFICATE_TTL_SECONDS,
  CERTIFICATE_MAX_LIFETIME_SECONDS,
  CERTIFICATE_NONCE_BYTES,
  CLOCK_TOLERANCE_SECONDS,
  signCallCertificate,
  signCallCertificateBatch,
  verifyCallCertificate,
  createCertificateSigner,
} from './certificate.js';
export type {
  CallCertificate,
  CertificateRejection,
  CertificateVerdict,
  SignCallCertificateInput,
  SignedCallCertificate,
  VerifyCallCertificateOptions,
} from './certificate.js';
export {
  ESCROW_SCHEME,
  EXACT_SCHEME,
  X402_NETWORKS,
  X402_HEADERS,
  buildPaymentRequired,
  parsePaymentRequired,
  parsePaymentHeader,
  encodePaymentHeader,
  encodePaymentResponse,
  decodePaymentResponse,
} from './x402.js';
export type {
  X402Network,
  PaymentRequirements,
  PaymentRequiredBody,
  QuoteInput,
  ParsedQuote,
  EscrowPayment,
  PaymentResponse,
} from './x402.js';
export {
  EXACT_NETWORKS,
  EXACT_REASONS,
  paymentHeaderScheme,
  parseExactPaymentHeader,
  encodeExactPaymentHeader,
  matchExactPayment,
} from './x402-exact.js';
export type { ExactNetwork, ExactRequirements, ExactPayment, ExactMismatch } from './x402-exact.js';
export { EXACT_REFUND_MAX_SKEW_MS, exactRefundMessage } from './x402-refund.js';
export type { ExactRefundTerms } from './x402-refund.js';
export { PRICE_BOUND_BASE_UNITS, PRICE_EXAMPLE, parsePrice } from './price.js';
export type { PriceRules } from './price.js';
export { PUBLISHER_LINK_TTL_MS, parsePublisherLinkChallenge, publisherLinkChallenge, signPublisherLink } from './publisher-link.js';
export type { PublisherLinkTerms } from './publisher-link.js';
export {
  LIMITS,
  ServiceNameSchema,
  EndpointSchema,
  DescriptionSchema,
  PublicKeySchema,
  ContractIdSchema,
  ManifestSchema,
  manifestUrl,
  firstIssueMessage,
} from './schemas.js';
export type { Manifest } from './schemas.js';
export {
  SERVICE_NAME_PATTERN,
  INVALID_SERVICE_NAME,
  serviceNameProblem,
  isValidServiceName,
  codePointLength,
  textProblem,
  printable,
  unsafeTextIn,
} from './text.js';
export {
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_HEADERS,
  WEBHOOK_TOLERANCE_SECONDS,
  WEBHOOK_EVENT_TYPES,
  signWebhookPayload,
  verifyWebhook,
} from './webhooks.js';
export type { WebhookEvent, WebhookEventType, WebhookRejection, WebhookVerdict, VerifyWebhookOptions } from './webhooks.js';
export {
  defineSettings,
  readSettings,
  settingsSchema,
  settingKind,
  textSetting,
  flagSetting,
  onWhenTrueSetting,
  intSetting,
  oneOfSetting,
  listSetting,
  urlSetting,
} from './settings.js';
export type { Setting, SettingKind, SettingSpecs, SettingValues, RawSetting } from './settings.js';
export { SHARED_SETTINGS } from './settings-shared.js';
export {
  PAYMENT_SCHEME,
  PAYMENT_RECEIPT_HEADER,
  MPP_PROBLEM_BASE,
  MPP_STELLAR_NETWORKS,
  MppError,
  mppProblem,
  canonicalJson,
  encodePaymentRequest,
  decodePaymentRequest,
  challengeId,
  createPaymentChallenge,
  isOwnChallenge,
  formatPaymentChallenge,
  parsePaymentChallenges,
  formatPaymentCredential,
  parsePaymentCredential,
  formatPaymentReceipt,
  parsePaymentReceipt,
  parseStellarVoucher,
  stellarDid,
} from './mpp.js';
export type {
  MppProblem,
  MppProblemCode,
  PaymentChallenge,
  ChallengeFields,
  PaymentCredential,
  PaymentReceipt,
  StellarChannelRequest,
  StellarVoucher,
} from './mpp.js';
