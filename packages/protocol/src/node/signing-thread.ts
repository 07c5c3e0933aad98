import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { createEd25519Signer, pkcs8FromSeed, type Ed25519Signer } from '../crypto.js';
import { decodeStrKey } from '../strkey.js';

// Ed25519 signing on a worker thread (Node only). A platform signs one
// certificate per paid call: about 0.04 ms of CPU each on the event loop,
// against about 0.017 ms to hand the message to a thread and take the
// signature back (measured on a 2-core machine). Under load the event loop
// is the gateway's bottleneck, so the signing moves to the other core. The
// messages of one turn of the event loop go to the thread as one (a burst
// of calls wakes it once), and their signatures come back as one.

/**
 * The worker's code, evaluated (nothing to resolve on disk); it runs as a
 * script or a module (a worker takes `--input-type` from its process), so
 * it reaches the built-ins without require or import. The key arrives as
 * PKCS#8 DER.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const { createPrivateKey, sign } = process.getBuiltinModule('node:crypto');
const key = createPrivateKey({ key: Buffer.from(workerData.der), format: 'der', type: 'pkcs8' });
parentPort.on('message', (batch) => {
  const out = [];
  for (const m of batch) {
    try {
      out.push([m[0], sign(null, m[1], key)]);
    } catch (err) {
      out.push([m[0], null, String(err && err.message)]);
    }
  }
  parentPort.postMessage(out);
});
`;

/** An {@link Ed25519Signer} whose signatures are made on a worker thread; `close` stops the thread. */
export interface ThreadedEd25519Signer extends Ed25519Signer {
  /** Whether signatures are made on a thread (false: inline, on a one-core machine). */
  readonly threaded: boolean;
  close(): Promise<void>;
}

/**
 * Creates a signer from a Stellar secret seed (`S...`) that signs on a
 * worker thread. The signatures are the same bytes as
 * {@link createEd25519Signer}'s. With one core there is nothing to gain:
 * signing stays inline (`threaded: false`) unless `thread: true` asks.
 *
 * The thread does not keep the process alive while idle. If it exits, the
 * signatures it owed fail with an error and the next signature starts a new
 * thread.
 */
export async function createThreadedEd25519Signer(secretSeed: string, options: { thread?: boolean } = {}): Promise<ThreadedEd25519Signer> {
  const inline = await createEd25519Signer(secretSeed);
  if (!(options.thread ?? availableParallelism() > 1)) return { publicKey: inline.publicKey, sign: inline.sign, threaded: false, close: async () => undefined };
  const der = pkcs8FromSeed(decodeStrKey('secretSeed', secretSeed));
  const pending = new Map<number, { resolve(signature: Uint8Array): void; reject(error: Error): void }>();
  let worker: Worker | undefined;
  let nextId = 0;
  let closed = false;
  /** The signatures asked for in this turn of the event loop, sent together at its end. */
  let outbox: Array<[number, Uint8Array]> = [];

  const send = () => {
    // What a thread that failed or was closed meanwhile owed has failed with it; the rest goes to the thread now running.
    const batch = outbox.filter(([id]) => pending.has(id));
    outbox = [];
    if (worker && batch.length > 0) worker.postMessage(batch);
  };

  const failAll = (error: Error) => {
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };

  function start(): Worker {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { der } });
    w.unref();
    w.on('message', (results: Array<[number, Uint8Array | null, string?]>) => {
      for (const [id, signature, error] of results) {
        const p = pending.get(id);
        if (!p) continue;
        pending.delete(id);
        if (signature) p.resolve(signature);
        else p.reject(new Error(`signing failed: ${error}`));
      }
      if (pending.size === 0) w.unref();
    });
    w.on('error', (err) => {
      if (worker === w) worker = undefined;
      failAll(new Error(`signing thread failed: ${err.message}`));
    });
    w.on('exit', (code) => {
      if (worker === w) worker = undefined;
      failAll(new Error(`signing thread exited (${code})`));
    });
    return w;
  }

  return {
    publicKey: inline.publicKey,
    threaded: true,
    sign(message) {
      if (closed) return Promise.reject(new Error('signer closed'));
      // Checked here, so that a batch never holds a message the thread cannot take.
      if (!(message instanceof Uint8Array)) return Promise.reject(new TypeError('the message to sign must be a Uint8Array'));
      const w = (worker ??= start());
      const id = nextId++;
      return new Promise<Uint8Array>((resolve, reject) => {
        // Referenced while a signature is owed, so a script awaiting one is not cut short.
        if (pending.size === 0) w.ref();
        pending.set(id, { resolve, reject });
        // A copy: the bytes as they are now are the bytes signed.
        if (outbox.push([id, message.slice()]) === 1) setImmediate(send);
      });
    },
    async close() {
      closed = true;
      const w = worker;
      worker = undefined;
      failAll(new Error('signer closed'));
      if (w) await w.terminate();
    },
  };
}
