import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '@farebox/protocol/files';
import { join } from 'node:path';
import { LOCAL_PASSPHRASE, TESTNET_PASSPHRASE } from '@farebox/stellar';
import type { Chain, EventRecord, TxRecord } from './core.js';
import type { AccountState } from './state.js';

type StoredAccount = [
  id: string,
  balance: string,
  seq: string,
  numSubEntries: number,
  lastModified: number,
  usdc?: [balance: string, limit: string, flags: number, lastModified: number],
];

/**
 * Persistence in a data directory: `state.json` (accounts, contract data, nonces,
 * latest ledger; rewritten atomically, at most every 200 ms) and `txlog.jsonl`
 * (one line per applied transaction with its events, appended as ledgers close).
 */
export class DataDir {
  private readonly statePath: string;
  private readonly logPath: string;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly dir: string,
    private readonly chain: Chain,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.statePath = join(dir, 'state.json');
    this.logPath = join(dir, 'txlog.jsonl');
  }

  /** Loads a previous run, if any. Returns true when something was loaded. */
  load(): boolean {
    if (!existsSync(this.statePath)) return false;
    const s = JSON.parse(readFileSync(this.statePath, 'utf8')) as {
      version: number;
      latest: Chain['latest'];
      genesis: Chain['genesis'];
      accounts: StoredAccount[];
      data: Array<{ contractId: string; key: string; val: string; lastModified: number }>;
      nonces: string[];
      passphrase?: string;
    };
    if (s.version !== 1) throw new Error(`unsupported devnet data version ${s.version} in ${this.statePath}`);
    const c = this.chain;
    // Signatures, contract ids and the USDC contract depend on the passphrase: another network's data would not add up.
    const stored = s.passphrase ?? LOCAL_PASSPHRASE;
    if (stored !== c.passphrase) {
      const name = stored === LOCAL_PASSPHRASE ? 'local' : stored === TESTNET_PASSPHRASE ? 'testnet' : stored;
      throw new Error(
        `the devnet data in ${this.dir} belongs to the network "${stored}", not "${c.passphrase}": start with FAREBOX_DEVNET_PASSPHRASE=${JSON.stringify(name)} (--passphrase) to keep it, or with another data directory`,
      );
    }
    c.latest = s.latest;
    c.genesis = s.genesis;
    c.accounts.clear();
    for (const [id, balance, seq, numSubEntries, lastModified, usdc] of s.accounts) {
      const a: AccountState = { id, balance: BigInt(balance), seq: BigInt(seq), numSubEntries, lastModified };
      if (usdc) a.usdc = { balance: BigInt(usdc[0]), limit: BigInt(usdc[1]), flags: usdc[2], lastModified: usdc[3] };
      c.accounts.set(id, a);
    }
    c.data.clear();
    for (const d of s.data) c.data.set(`${d.contractId}|${d.key}`, d);
    for (const n of s.nonces) c.nonces.add(n);
    if (existsSync(this.logPath)) {
      for (const line of readFileSync(this.logPath, 'utf8').split('\n')) {
        if (!line.trim()) continue;
        let entry: { tx: Omit<TxRecord, 'feeCharged'> & { feeCharged: string }; events: EventRecord[] };
        try {
          entry = JSON.parse(line);
        } catch {
          continue; // a torn last line after a crash
        }
        c.record({ ...entry.tx, feeCharged: BigInt(entry.tx.feeCharged) }, entry.events);
      }
    }
    return true;
  }

  append(txs: TxRecord[], events: (t: TxRecord) => EventRecord[]): void {
    if (!txs.length) return;
    const lines = txs.map((t) => JSON.stringify({ tx: { ...t, feeCharged: t.feeCharged.toString() }, events: events(t) })).join('\n');
    appendFileSync(this.logPath, `${lines}\n`, { mode: 0o600 });
  }

  scheduleSave(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.saveNow();
    }, 200);
    this.timer.unref?.();
  }

  saveNow(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const c = this.chain;
    const accounts: StoredAccount[] = [...c.accounts.values()].map((a) => {
      const row: StoredAccount = [a.id, a.balance.toString(), a.seq.toString(), a.numSubEntries, a.lastModified];
      if (a.usdc) row.push([a.usdc.balance.toString(), a.usdc.limit.toString(), a.usdc.flags, a.usdc.lastModified]);
      return row;
    });
    const state = { version: 1, passphrase: c.passphrase, latest: c.latest, genesis: c.genesis, accounts, data: [...c.data.values()], nonces: [...c.nonces] };
    // Atomic (a process crash leaves the old state or the new); not flushed to disk on every save.
    writeFileAtomicSync(this.statePath, JSON.stringify(state), { durable: false });
  }
}
