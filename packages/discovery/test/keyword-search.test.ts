import { describe, expect, it } from 'vitest';
import { createSearchIndex, tokenize, type SearchIndex } from '@farebox/discovery';

// A small catalogue in several languages, searched without an embedding model
// (keyword-only, as on a host where the model is missing).
const catalogue = [
  { id: 'pwgen', name: 'pwgen', description: 'Generates secure random passwords and passphrases of any length.' },
  { id: 'pwned', name: 'pwned', description: 'Check whether an account appears in known data breaches.' },
  { id: 'fx-convert', name: 'fx-convert', description: 'Convert amounts between currencies at live rates, for example 250 USD to EUR, GBP or JPY.' },
  { id: 'geocoder', name: 'geocoder', description: 'Convert a street address to map coordinates and coordinates back to an address.' },
  { id: 'pdfmaker', name: 'pdfmaker', description: 'Convert HTML and Word documents to PDF files.' },
  { id: 'tldr', name: 'tldr', description: 'Summarize long articles and reports in a few sentences.' },
  { id: 'snapshotter', name: 'snapshotter', description: 'Capture a full-page screenshot of any webpage as PNG.' },
  { id: 'linkcheck', name: 'linkcheck', description: 'Finds broken links on web pages and reports their status codes.' },
  { id: 'cookbook', name: 'cookbook', description: 'Find recipes by ingredient, with step-by-step cooking instructions.' },
  { id: 'polyglot', name: 'polyglot', description: 'Translate text between more than 100 languages.' },
  { id: 'mailcheck', name: 'mailcheck', description: 'Check whether an e-mail address is valid and deliverable.' },
  { id: 'skycast', name: 'skycast', description: 'Hourly weather forecasts for any city.' },
  { id: 'generador-claves', name: 'generador-claves', description: 'Genera contraseñas seguras y aleatorias.' },
  { id: 'resume-auto', name: 'resume-auto', description: "Résumé automatique d'articles et de rapports." },
  { id: 'passwort-tresor', name: 'passwort-tresor', description: 'Speichert Passwörter verschlüsselt und teilt sie im Team.' },
  { id: 'receitas', name: 'receitas', description: 'Receitas culinárias por ingredientes e tipo de dieta.' },
  { id: 'tenki', name: '天気予報', description: '日本全国の天気予報サービス' },
  { id: 'wetterdienst', name: 'wetterdienst', description: 'Wettervorhersage für Städte weltweit mit Temperatur und Niederschlag.' },
];

async function keywordIndex(): Promise<SearchIndex> {
  const index = createSearchIndex();
  for (const doc of catalogue) await index.upsert(doc);
  expect(index.status().mode).toBe('keyword-only');
  return index;
}

async function top(index: SearchIndex, query: string, n = 3): Promise<string[]> {
  return (await index.search(query, { limit: 10 })).slice(0, n).map((h) => h.id);
}

describe('keyword-only search finds plain same-language queries', () => {
  it('finds a service that says "passwords" for "make me a strong password"', async () => {
    const index = await keywordIndex();
    expect(await top(index, 'make me a strong password')).toContain('pwgen');
  });

  it('ranks the currency converter first for "convert 100 dollars to euros"', async () => {
    const index = await keywordIndex();
    expect(await top(index, 'convert 100 dollars to euros', 1)).toEqual(['fx-convert']);
    expect(await top(index, 'how much is 20 euros in yen', 1)).toEqual(['fx-convert']);
  });

  it('finds "Summarize" for "summary" and "summaries"', async () => {
    const index = await keywordIndex();
    expect(await top(index, 'summary')).toContain('tldr');
    expect(await top(index, 'article summaries')).toContain('tldr');
  });

  it('treats "web page" and "webpage" alike, both ways', async () => {
    const index = await keywordIndex();
    expect(await top(index, 'screenshot of a web page')).toContain('snapshotter');
    expect(await top(index, 'web page')).toEqual(expect.arrayContaining(['snapshotter', 'linkcheck']));
    expect(await top(index, 'webpage')).toEqual(expect.arrayContaining(['snapshotter', 'linkcheck']));
    expect(await top(index, 'email validation')).toContain('mailcheck');
  });

  it('finds "cooking" for "cook"', async () => {
    const index = await keywordIndex();
    expect(await top(index, 'cook')).toContain('cookbook');
    expect(await top(index, 'cook dinner with what I have')).toContain('cookbook');
  });

  it('completes the last word while it is being typed', async () => {
    const index = await keywordIndex();
    expect(await top(index, 'transl')).toContain('polyglot');
    expect(await top(index, 'random passw')).toContain('pwgen');
    expect(await top(index, 'weather fore')).toContain('skycast');
  });

  it('stems Spanish, French, German and Portuguese in their own language', async () => {
    const index = await keywordIndex();
    expect(await top(index, 'contraseña segura')).toContain('generador-claves');
    expect(await top(index, 'résumer un rapport')).toContain('resume-auto');
    expect(await top(index, 'Passwort speichern')).toContain('passwort-tresor');
    expect(await top(index, 'receita')).toContain('receitas');
  });

  it('finds a German compound by its first word', async () => {
    const index = await keywordIndex();
    expect(await top(index, 'Wetter morgen')).toContain('wetterdienst');
  });

  it('keeps Japanese bigrams and refuses nonsense', async () => {
    const index = await keywordIndex();
    expect(await top(index, '天気')).toEqual(['tenki']);
    expect(await index.search('xqzv blorf')).toEqual([]);
    expect(await index.search('qqqzzzx')).toEqual([]);
  });
});

/**
 * The same contents as a snapshot written before stemming: no analyzer in the
 * header and the keyword sections made of plain tokens (what `tokenize` gives),
 * name tokens counting twice.
 */
function asOlderSnapshot(bytes: Uint8Array): Uint8Array {
  const align = (n: number) => Math.ceil(n / 4) * 4;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(8, true);
  type Section = { name: string; type: 'i32' | 'f32' | 'u8'; length: number };
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + headerLength))) as {
    analyzer?: string;
    slots: number;
    docs: Array<[string, string, string, unknown, number]>;
    terms: string[];
    sections: Section[];
  };
  expect(header.analyzer).toBeDefined();
  delete header.analyzer;
  const size = { i32: 4, f32: 4, u8: 1 };
  const sections = new Map<string, Uint8Array>();
  let at = align(12 + headerLength);
  for (const s of header.sections) {
    sections.set(s.name, bytes.slice(at, at + s.length * size[s.type]));
    at += align(s.length * size[s.type]);
  }
  const postings = new Map<string, Map<number, number>>();
  const docLen = new Float32Array(header.slots);
  for (const [, name, description, , slot] of header.docs) {
    for (const [text, weight] of [
      [name, 2],
      [description, 1],
    ] as const) {
      for (const t of tokenize(text)) {
        const p = postings.get(t) ?? new Map<number, number>();
        postings.set(t, p.set(slot, (p.get(slot) ?? 0) + weight));
        docLen[slot]! += weight;
      }
    }
  }
  header.terms = [...postings.keys()];
  const offsets = new Int32Array(header.terms.length + 1);
  const slots: number[] = [];
  const tfs: number[] = [];
  header.terms.forEach((t, i) => {
    offsets[i] = slots.length;
    for (const [slot, tf] of postings.get(t)!) {
      slots.push(slot);
      tfs.push(tf);
    }
  });
  offsets[header.terms.length] = slots.length;
  const u8 = (a: Int32Array | Float32Array) => new Uint8Array(a.buffer);
  sections.set('offsets', u8(offsets));
  sections.set('postingSlots', u8(Int32Array.from(slots)));
  sections.set('postingTfs', u8(Float32Array.from(tfs)));
  sections.set('docLen', u8(docLen));
  header.sections = header.sections.map((s) => ({ ...s, length: sections.get(s.name)!.length / size[s.type] }));
  const encoded = new TextEncoder().encode(JSON.stringify(header));
  let total = align(12 + encoded.length);
  for (const s of header.sections) total += align(sections.get(s.name)!.length);
  const out = new Uint8Array(total);
  out.set(bytes.subarray(0, 8));
  new DataView(out.buffer).setUint32(8, encoded.length, true);
  out.set(encoded, 12);
  at = align(12 + encoded.length);
  for (const s of header.sections) {
    out.set(sections.get(s.name)!, at);
    at += align(sections.get(s.name)!.length);
  }
  return out;
}

describe('snapshots and stemming', () => {
  it('finds inflected words after loading its own snapshot', async () => {
    const index = await keywordIndex();
    const copy = createSearchIndex();
    await copy.load(index.snapshot());
    expect(await top(copy, 'make me a strong password')).toContain('pwgen');
    expect(await top(copy, 'transl')).toContain('polyglot');
  });

  it('re-indexes a snapshot written before stemming, so inflected words are found', async () => {
    const index = await keywordIndex();
    const copy = createSearchIndex();
    await copy.load(asOlderSnapshot(index.snapshot()));
    expect(copy.size).toBe(catalogue.length);
    expect(await top(copy, 'strong password please')).toContain('pwgen');
    expect(await top(copy, 'summary please')).toContain('tldr');
  });
});
