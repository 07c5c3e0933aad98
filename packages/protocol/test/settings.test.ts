import { describe, expect, it } from 'vitest';
import { defineSettings, flagSetting, intSetting, listSetting, oneOfSetting, readSettings, settingsSchema, textSetting, urlSetting } from '../src/index.js';

// A host's variables, declared once: what readSettings gives the host and what it says of bad values.
const SETTINGS = defineSettings({
  PORT: { meaning: 'port', kind: intSetting({ min: 0, max: 65535 }), fallback: 8080 },
  MODE: { meaning: 'mode', kind: oneOfSetting(['fast', 'safe']), fallback: 'safe' },
  DEBUG: { meaning: 'debug', kind: flagSetting() },
  PEERS: { meaning: 'peers', kind: listSetting('comma-separated hosts') },
  HOOK: { meaning: 'hook', kind: urlSetting() },
  NAME: { meaning: 'name', kind: textSetting() },
});

describe('readSettings', () => {
  it('parses each variable to its type, empty counting as unset and a fallback standing in', () => {
    const { values, problems } = readSettings({ PORT: '9000', DEBUG: 'true', PEERS: 'a,b', HOOK: 'https://h.example/x', NAME: '', OTHER: 'x' }, SETTINGS);
    expect(problems).toEqual([]);
    expect(values).toEqual({ PORT: 9000, MODE: 'safe', DEBUG: true, PEERS: ['a', 'b'], HOOK: 'https://h.example/x', NAME: undefined });
  });

  it('names every malformed value at once, in the declaration order, and leaves it out', () => {
    const { values, problems } = readSettings({ HOOK: 'ftp://h', DEBUG: 'yes', PORT: '70000', MODE: 'slow' }, SETTINGS);
    expect(problems).toEqual([
      'PORT must be an integer from 0 to 65535',
      'MODE must be fast or safe, got "slow"',
      'DEBUG must be true or false',
      'HOOK must be an http(s) URL, got "ftp://h"',
    ]);
    expect(values).toMatchObject({ PORT: 8080, MODE: 'safe', DEBUG: undefined, HOOK: undefined });
  });

  it('is one zod schema of the whole environment', () => {
    const schema = settingsSchema(SETTINGS);
    expect(schema.parse({ PORT: '1', MODE: 'fast' })).toMatchObject({ PORT: 1, MODE: 'fast' });
    expect(schema.safeParse({ PORT: '-1' }).error?.issues.map((i) => i.message)).toEqual(['PORT must be an integer from 0 to 65535']);
  });
});
