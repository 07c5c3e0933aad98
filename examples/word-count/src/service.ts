import { createProvider, type Provider, type ProviderEnv } from '@farebox/provider';
import { z } from 'zod';

const Payload = z.object({ text: z.string().max(200_000, 'text too long (max 200000 characters)') });

/** USDC per word; the price never drops below the 0.001 USDC floor. */
export const PRICE_PER_WORD = 0.0001;

function words(text: string): number {
  return text.split(/\s+/u).filter(Boolean).length;
}

function parse(payload: unknown): { text: string } {
  const parsed = Payload.safeParse(payload);
  if (!parsed.success) throw new Error(parsed.error.issues[0]?.path.length ? 'text required (a string)' : 'payload must be { "text": string }');
  return parsed.data;
}

/**
 * The word-count service: dynamic pricing with priceFn. 10 words or fewer
 * cost the floor (0.001 USDC), each word costs 0.0001 USDC beyond that.
 * Runs on the local network; paid calls are served once `bootstrap()` has
 * registered it in the devnet's registry (FAREBOX_DEVNET_URL).
 */
export function createWordCountService(env: ProviderEnv = process.env): Provider {
  return createProvider({
    service: 'word-count',
    pricePerCall: '0.001',
    // A decimal string with USDC's 7 decimals: the float product never leaks extra digits.
    priceFn: (payload) => (words(parse(payload).text) * PRICE_PER_WORD).toFixed(7),
    pricingNote: '0.0001 USDC per word, at least 0.001 USDC',
    description: 'Counts words, characters and lines. Input: { "text": string }. Output: { "words", "characters", "lines" }.',
    network: 'local',
    env,
  }).serve((payload) => {
    const { text } = parse(payload);
    return { words: words(text), characters: [...text].length, lines: text === '' ? 0 : text.split('\n').length };
  });
}
