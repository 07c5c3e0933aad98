/**
 * Names and text that cannot deceive or break a store: the one service-name
 * policy (the API, the provider SDK, the CLI, the dashboard and the catalog
 * mirror all use it) and the characters no string of a request may carry.
 */

/** Longest service name (the registry contract enforces the same). */
const SERVICE_NAME_MAX = 32;

/**
 * A service name: lower-case ASCII letters, digits and single hyphens, starting
 * and ending with a letter or digit (like npm names and DNS labels), 1 to 32
 * characters. No look-alike letters, no case, no spaces, no invisible characters.
 */
export const SERVICE_NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export const INVALID_SERVICE_NAME = `invalid service name: use 1 to ${SERVICE_NAME_MAX} lower-case letters, digits and single hyphens, starting and ending with a letter or digit`;

/** What is wrong with a service name (`service required`, `service name too long (max 32)`, {@link INVALID_SERVICE_NAME}), or undefined. */
export function serviceNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'service required';
  if (codePointLength(name) > SERVICE_NAME_MAX) return `service name too long (max ${SERVICE_NAME_MAX})`;
  if (!SERVICE_NAME_PATTERN.test(name)) return INVALID_SERVICE_NAME;
  return undefined;
}

export const isValidServiceName = (name: unknown): name is string => serviceNameProblem(name) === undefined;

/** Characters, as people count them: code points (an emoji is one), not UTF-16 units. */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

// C0 controls, DEL and C1 controls; the text form lets tab, line feed and carriage return through.
const SUSPECT = /[\u0000-\u001f\u007f-\u009f\ud800-\udfff]/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const TEXT_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const hex = (c: number) => `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * What a string may not carry, or undefined: a control character (C0, DEL, C1;
 * `text` lets tab, line feed and carriage return through, names and ids allow
 * none) or an unpaired surrogate (UTF-16 that is no text: it cannot be stored
 * or sent as UTF-8). The answer names the first one, e.g. `control character U+0000`.
 */
export function textProblem(s: string, kind: 'text' | 'name' = 'text'): string | undefined {
  if (!SUSPECT.test(s)) return undefined;
  const control = (kind === 'text' ? TEXT_CONTROL : CONTROL).exec(s);
  const lone = LONE_SURROGATE.exec(s);
  if (control && (!lone || control.index < lone.index)) return `control character ${hex(control[0].charCodeAt(0))} not allowed`;
  if (lone) return `unpaired surrogate ${hex(lone[0].charCodeAt(0))} not allowed`;
  return undefined;
}

/** A string shown with everything but printable ASCII escaped (`\u0435cho`), for messages and logs. */
export function printable(s: string, max = 80): string {
  let out = '';
  for (const ch of s) {
    if (out.length >= max) return `${out}…`;
    const c = ch.codePointAt(0)!;
    if (c >= 0x20 && c < 0x7f && ch !== '\\' && ch !== '"') out += ch;
    else if (ch === '\\' || ch === '"') out += `\\${ch}`;
    else for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`;
  }
  return out;
}

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;
const PATH_MAX = 120;

type Frame = { value: unknown; parent: Frame | undefined; key: string | number | undefined };

function pathOf(frame: Frame | undefined): string {
  const parts: string[] = [];
  for (let f = frame; f && f.key !== undefined; f = f.parent) {
    parts.push(typeof f.key === 'number' ? `[${f.key}]` : PLAIN_KEY.test(f.key) ? `.${f.key}` : `["${printable(f.key, 40)}"]`);
  }
  const path = parts.reverse().join('').replace(/^\./, '');
  return path.length > PATH_MAX ? `…${path.slice(-PATH_MAX)}` : path;
}

/**
 * The first string of a parsed JSON (or form) body that carries a control
 * character other than tab, line feed and carriage return, or an unpaired
 * surrogate, in a value or a field name, as the `400` message that names it
 * (`invalid service: control character U+0000 not allowed`, `invalid
 * payload.items[2]: ...`, `invalid field name in payload: ...`); undefined when
 * there is none. Walks without recursion, so any depth is safe.
 */
export function unsafeTextIn(body: unknown): string | undefined {
  const stack: Frame[] = [{ value: body, parent: undefined, key: undefined }];
  while (stack.length) {
    const frame = stack.pop()!;
    const v = frame.value;
    if (typeof v === 'string') {
      const problem = textProblem(v);
      if (problem) return `invalid ${pathOf(frame) || 'body'}: ${problem}`;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], parent: frame, key: i });
    } else if (typeof v === 'object' && v !== null) {
      const keys = Object.keys(v);
      for (const k of keys) {
        const problem = textProblem(k);
        if (problem) {
          const where = pathOf(frame);
          return `invalid field name${where ? ` in ${where}` : ''}: ${problem}`;
        }
      }
      for (let i = keys.length - 1; i >= 0; i--) stack.push({ value: (v as Record<string, unknown>)[keys[i]!], parent: frame, key: keys[i]! });
    }
  }
  return undefined;
}
