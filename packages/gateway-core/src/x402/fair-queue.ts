/** A slot's wait ended at its deadline: nothing was started for it. */
export class SlotTimeout extends Error {
  constructor(readonly waitedMs: number) {
    super(`no settlement slot came free within ${Math.round(waitedMs)} ms`);
  }
}

interface Waiter {
  key: string;
  grant(release: () => void): void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Slots handed out fairly: at most `capacity` held at once, at most `perKey`
 * by one key (a payer), and the keys waiting served in turn: each key with
 * waiters gets one slot per round, in the order the keys started waiting,
 * and a key that got one goes to the back of the round. So a crowd of
 * requests from a few keys never stands in front of another key for more
 * than one round, and no key holds more than `perKey` slots. A waiter whose
 * deadline passes leaves the queue with {@link SlotTimeout}.
 */
export class FairSlots {
  private readonly held = new Map<string, number>();
  private total = 0;
  /** Keys with waiters, in their turn's order (a Map keeps insertion order); each key's waiters are FIFO. */
  private readonly waiting = new Map<string, Waiter[]>();

  constructor(
    readonly capacity: number,
    readonly perKey: number,
  ) {
    if (!(capacity >= 1 && perKey >= 1)) throw new RangeError('capacity and perKey must be at least 1');
  }

  /** Waits for a slot of `key` (at most `waitMs`); resolves with the function that gives it back (once). */
  acquire(key: string, waitMs: number): Promise<() => void> {
    return new Promise((resolve, reject) => {
      // The wait's length, for the error only (the timer decides): a duration (clock.ts).
      const started = performance.now();
      const w: Waiter = { key, grant: (release) => resolve(release), timer: undefined };
      const queue = this.waiting.get(key);
      if (queue) queue.push(w);
      else this.waiting.set(key, [w]);
      this.dispatch();
      if (this.isWaiting(w)) {
        w.timer = setTimeout(
          () => {
            if (!this.remove(w)) return;
            reject(new SlotTimeout(performance.now() - started));
          },
          Math.max(0, waitMs),
        );
        w.timer.unref?.();
      }
    });
  }

  /** Slots held and waiters, in total and for one key. */
  stats(key?: string): { held: number; waiting: number } {
    if (key !== undefined) return { held: this.held.get(key) ?? 0, waiting: this.waiting.get(key)?.length ?? 0 };
    let waiting = 0;
    for (const q of this.waiting.values()) waiting += q.length;
    return { held: this.total, waiting };
  }

  private isWaiting(w: Waiter): boolean {
    return this.waiting.get(w.key)?.includes(w) ?? false;
  }

  private remove(w: Waiter): boolean {
    const queue = this.waiting.get(w.key);
    const at = queue?.indexOf(w) ?? -1;
    if (!queue || at < 0) return false;
    queue.splice(at, 1);
    if (queue.length === 0) this.waiting.delete(w.key);
    return true;
  }

  private dispatch(): void {
    while (this.total < this.capacity) {
      let next: Waiter | undefined;
      for (const [key, queue] of this.waiting) {
        if ((this.held.get(key) ?? 0) >= this.perKey) continue;
        next = queue.shift();
        // The key's turn is used: to the back of the round (or out, with nobody left waiting).
        this.waiting.delete(key);
        if (queue.length > 0) this.waiting.set(key, queue);
        break;
      }
      if (!next) return;
      if (next.timer) clearTimeout(next.timer);
      this.total++;
      this.held.set(next.key, (this.held.get(next.key) ?? 0) + 1);
      const key = next.key;
      let released = false;
      next.grant(() => {
        if (released) return;
        released = true;
        this.total--;
        const n = (this.held.get(key) ?? 1) - 1;
        if (n > 0) this.held.set(key, n);
        else this.held.delete(key);
        this.dispatch();
      });
    }
  }
}
