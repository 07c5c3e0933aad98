/**
 * Characters that change how the text around them reads without being seen
 * themselves: controls (Unicode category Cc: C0, DEL, C1), format characters
 * (Cf: the bidi embeddings, overrides and isolates U+202A-U+202E and
 * U+2066-U+2069, the marks U+200E, U+200F and U+061C, zero-width U+200B-U+200D,
 * U+2060-U+2064, U+206A-U+206F, U+FEFF, soft hyphen, tags...), line and
 * paragraph separators (Zl, Zp: U+2028, U+2029), lone surrogates (Cs), and the
 * rest of Unicode's default-ignorable code points (fillers such as U+3164,
 * variation selectors, the unassigned U+2065).
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;
/** Runs of white space (what is left of it once the controls are gone: spaces of every width). */
const SPACES = /\s+/gu;

/**
 * Text that someone else chose (an OAuth client's `client_name`, a host name
 * from a redirect URI, a service's description), made fit to be shown to a
 * user next to text of our own: every control, format, bidi and other
 * invisible character is removed, white space is collapsed to single spaces
 * and trimmed. What is left can still be written right to left (Arabic,
 * Hebrew), so a page shows the result inside an isolating element (`<bdi>`,
 * or `dir="auto"` with `unicode-bidi: isolate`) to keep it from reordering the
 * text around it. HTML escaping is the page's job; this is not it.
 *
 * Returns `fallback` when nothing visible is left.
 *
 * @example
 * displayText('Claude (Anthropic) \u2713 verified\u202e...') // 'Claude (Anthropic) ✓ verified...'
 * displayText('\u200b\u200b', 'Unnamed app')                 // 'Unnamed app'
 */
export function displayText(text: string, fallback = ''): string {
  const shown = String(text).replace(INVISIBLE, '').replace(SPACES, ' ').trim();
  return shown === '' ? fallback : shown;
}
