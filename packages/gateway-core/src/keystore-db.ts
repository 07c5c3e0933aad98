import type { KeystoreRecord, KeystoreStorage } from '@farebox/wallets';
import type { Db } from './db.js';

type Row = { ref: string; address: string; iv: string; ciphertext: string; tag: string; created_at: Date | string };

const toRecord = (r: Row): KeystoreRecord => ({
  ref: r.ref,
  address: r.address,
  iv: r.iv,
  ciphertext: r.ciphertext,
  tag: r.tag,
  createdAt: new Date(r.created_at).toISOString(),
});

/**
 * Keystore records in the gateway's database, so several gateways share the
 * platform keys and users' wallets (with one `FAREBOX_KEYSTORE_KEY`).
 * `putIfAbsent` is one INSERT ... ON CONFLICT: the first writer wins.
 */
export class DbKeystoreStorage implements KeystoreStorage {
  constructor(private readonly db: Db) {}

  async get(ref: string) {
    const { rows } = await this.db.query<Row>('SELECT * FROM gw_keystore WHERE ref = $1', [ref]);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async getByAddress(address: string) {
    const { rows } = await this.db.query<Row>('SELECT * FROM gw_keystore WHERE address = $1', [address]);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async putIfAbsent(record: KeystoreRecord) {
    await this.db.query('INSERT INTO gw_keystore (ref, address, iv, ciphertext, tag) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (ref) DO NOTHING', [
      record.ref,
      record.address,
      record.iv,
      record.ciphertext,
      record.tag,
    ]);
    const stored = await this.get(record.ref);
    if (!stored) throw new Error(`keystore record ${record.ref} vanished`);
    return stored;
  }
}
