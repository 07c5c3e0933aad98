/** Plain text tables and values for the human output. */

export function table(rows: Array<Record<string, string | number | null | undefined>>, columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

export function pairs(values: Array<[string, string | number | boolean | null | undefined]>): string {
  const width = Math.max(...values.map(([k]) => k.length));
  return values
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k.padEnd(width)}  ${v === null ? '-' : String(v)}`)
    .join('\n');
}

/**
 * A USD amount as exact as the ledger keeps it (7 decimals), with at least the cents: `$5.00`, `$4.996`
 * after four calls of a tenth of a cent (never rounded to a `$5.00` that is not there), `$0.0000123`.
 */
export const usd = (n: number | undefined) => (n === undefined ? '' : `$${n.toFixed(7).replace(/(\.\d{2}\d*?)0+$/, '$1')}`);

/** JSON with bigints as strings (money is exact). */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
}
