/**
 * The index's terms in sorted order for prefix lookups. New terms wait in a
 * small unsorted list that is merged in when it grows.
 */
export class TermDictionary {
  private sorted: string[] = [];
  /** Terms added since the last merge, kept sorted too (insertion into a short array). */
  private recent: string[] = [];

  add(term: string): void {
    this.recent.splice(lowerBound(this.recent, term), 0, term);
    if (this.recent.length > Math.max(512, Math.min(4096, this.sorted.length >> 4))) this.merge();
  }

  addAll(terms: Iterable<string>): void {
    const add = [...this.recent];
    for (const t of terms) add.push(t);
    this.recent = add.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    this.merge();
  }

  clear(): void {
    this.sorted = [];
    this.recent = [];
  }

  /** Up to `limit` terms starting with `prefix`; namespaced terms ("en:...") only when `namespaced`. */
  withPrefix(prefix: string, limit: number, namespaced: boolean): string[] {
    const out: string[] = [];
    for (const list of [this.sorted, this.recent]) {
      for (let i = lowerBound(list, prefix); i < list.length && out.length < limit; i++) {
        const t = list[i]!;
        if (!t.startsWith(prefix)) break;
        if (namespaced || !t.includes(':')) out.push(t);
      }
    }
    return out;
  }

  private merge(): void {
    if (this.recent.length === 0) return;
    const add = this.recent;
    const old = this.sorted;
    const out = new Array<string>(old.length + add.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < old.length && j < add.length) out[k++] = old[i]! <= add[j]! ? old[i++]! : add[j++]!;
    while (i < old.length) out[k++] = old[i++]!;
    while (j < add.length) out[k++] = add[j++]!;
    this.sorted = out;
    this.recent = [];
  }
}

/** The first index of the sorted `list` whose entry is not below `key`. */
function lowerBound(list: string[], key: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
