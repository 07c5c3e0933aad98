import {
  CERTIFICATE_BATCH_MAX,
  CERTIFICATE_VERSIONS_HEADER,
  signCallCertificate,
  signCallCertificateBatch,
  type Ed25519Signer,
  type SignCallCertificateInput,
} from '@farebox/protocol';

interface Request {
  input: SignCallCertificateInput;
  resolve(header: string): void;
  reject(error: unknown): void;
}

/**
 * The call certificates a gateway sends, and which version each service gets.
 *
 * A service whose answers say it verifies v2 (`farebox-certificate-versions:
 * v1, v2`, as every provider built with `@farebox/provider` answers) gets
 * batch-signed certificates: the ones asked for in one turn of the event loop
 * share one Ed25519 signature over their Merkle root, so a burst of calls
 * costs one signature instead of one each. Every other service, and any
 * service before its first answer, gets v1: one signature per certificate.
 */
export interface CertificateIssuer {
  /** The `farebox-certificate` header for this call, signed at the end of this turn of the event loop. */
  issue(endpoint: string, input: SignCallCertificateInput): Promise<string>;
  /**
   * Records what a service's answer said about the versions it verifies.
   * Returns whether it verifies v2.
   */
  noteAnswer(endpoint: string, headers: Record<string, string | string[] | undefined>): boolean;
  /** Whether a header is a batch-signed (v2) certificate. */
  isBatchSigned(header: string): boolean;
}

/** Most endpoints remembered (a bound against a registry that keeps growing). */
const MAX_ENDPOINTS = 10_000;

export function createCertificateIssuer(signer: Ed25519Signer): CertificateIssuer {
  /** The endpoints whose last answer said they verify v2. */
  const batchSigned = new Set<string>();
  /** The header value last seen per endpoint: most answers repeat it, and are not parsed again. */
  const announced = new Map<string, string>();
  let single: Request[] = [];
  let batched: Request[] = [];
  let scheduled = false;

  const settle = (requests: Request[], signed: Promise<Array<{ header: string }>>) =>
    signed.then(
      (certificates) => {
        for (const [i, r] of requests.entries()) r.resolve(certificates[i]!.header);
      },
      (error: unknown) => {
        for (const r of requests) r.reject(error);
      },
    );

  function flush() {
    scheduled = false;
    const ones = single;
    const many = batched;
    single = [];
    batched = [];
    for (const r of ones) signCallCertificate(r.input, signer).then((c) => r.resolve(c.header), r.reject);
    for (let i = 0; i < many.length; i += CERTIFICATE_BATCH_MAX) {
      const chunk = many.slice(i, i + CERTIFICATE_BATCH_MAX);
      void settle(
        chunk,
        signCallCertificateBatch(
          chunk.map((r) => r.input),
          signer,
        ),
      );
    }
  }

  return {
    issue(endpoint, input) {
      return new Promise<string>((resolve, reject) => {
        (batchSigned.has(endpoint) ? batched : single).push({ input, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
    noteAnswer(endpoint, headers) {
      const raw = headers[CERTIFICATE_VERSIONS_HEADER];
      const value = raw === undefined ? '' : Array.isArray(raw) ? raw.join(',') : raw;
      if (announced.get(endpoint) === value) return batchSigned.has(endpoint);
      if (announced.size >= MAX_ENDPOINTS) {
        announced.clear();
        batchSigned.clear();
      }
      announced.set(endpoint, value);
      const v2 = value.split(',').some((token) => token.trim().toLowerCase() === 'v2');
      if (v2) batchSigned.add(endpoint);
      else batchSigned.delete(endpoint);
      return v2;
    },
    isBatchSigned: (header) => header.startsWith('v2.'),
  };
}
