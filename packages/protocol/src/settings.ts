import { z } from 'zod';

/**
 * Settings read from an environment, declared once: each host (the gateway,
 * the discovery service, the CLI, the stdio adapter, the devnet bin) and each
 * SDK that falls back on the environment lists the variables it reads as a
 * `SettingSpecs` record: meaning, default, the values taken and a zod schema
 * that parses the text. `readSettings` parses an environment against it and
 * names every problem at once; docs/configuration.md is generated from the
 * same records (`pnpm docs:config`).
 */

/** A variable's text: undefined when it is unset or empty. */
export type RawSetting = string | undefined;

/** How one kind of value is written and parsed (`int`, `flag`, `text`, ...). */
export interface SettingKind<T> {
  /** The values it takes, as the docs show them (markdown). */
  values: string;
  /** The zod schema of the variable `name`: the text in, the typed value out; an issue's message is the problem reported. */
  schema(name: string): z.ZodType<T | undefined, RawSetting>;
}

/** One environment variable. */
export interface Setting<T = unknown> {
  /** What it does (markdown, one paragraph). */
  meaning: string;
  /** How the text is parsed and checked. */
  kind: SettingKind<T>;
  /** The value when unset: `readSettings` returns it. */
  fallback?: T;
  /** The default as the docs show it (markdown); when omitted, `fallback` written as code, else "unset". */
  default?: string;
  /** The values it takes, when the docs should say more than the kind does (markdown). */
  values?: string;
  /** Sensitive (a key, a password in a URL): the docs mark it so. */
  secret?: boolean;
  /** A deprecated variable: what to set instead (markdown). */
  deprecated?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: a record of settings of every value type
export type SettingSpecs = Record<string, Setting<any>>;

/** The typed values of a record of settings (undefined when unset and without a fallback). */
export type SettingValues<S extends SettingSpecs> = {
  [K in keyof S]: S[K]['kind'] extends SettingKind<infer T>
    ? 'fallback' extends keyof S[K]
      ? undefined extends S[K]['fallback']
        ? T | undefined
        : T
      : T | undefined
    : never;
};

/** Declares a record of settings (typed; the order is the docs' order and the order problems are named in). */
export function defineSettings<S extends SettingSpecs>(specs: S): S {
  return specs;
}

/** The zod schema of a whole environment: every setting of `specs`, each parsed from its text. */
export function settingsSchema<S extends SettingSpecs>(specs: S): z.ZodType<SettingValues<S>, Record<string, RawSetting>> {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const schema = spec.kind.schema(name);
    shape[name] = spec.fallback === undefined ? schema : schema.transform((v) => v ?? spec.fallback);
  }
  return z.object(shape).transform((o) => o as SettingValues<S>) as unknown as z.ZodType<SettingValues<S>, Record<string, RawSetting>>;
}

/**
 * Parses an environment against `specs`: the typed values (a value with a
 * problem is left out: undefined, or its fallback) and every problem, in the
 * specs' order. Empty text counts as unset.
 *
 * @example
 * const { values, problems } = readSettings(process.env, DISCOVERY_SETTINGS);
 * if (problems.length) throw new ConfigError(problems);
 */
export function readSettings<S extends SettingSpecs>(env: Record<string, RawSetting>, specs: S): { values: SettingValues<S>; problems: string[] } {
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, spec] of Object.entries(specs)) {
    const raw = env[name];
    const parsed = spec.kind.schema(name).safeParse(raw === '' ? undefined : raw);
    if (parsed.success) values[name] = parsed.data ?? spec.fallback;
    else {
      values[name] = spec.fallback;
      for (const issue of parsed.error.issues) if (!problems.includes(issue.message)) problems.push(issue.message);
    }
  }
  return { values: values as SettingValues<S>, problems };
}

/** A kind from a parse function: it returns the value, or calls `problem` with the message to report. */
export function settingKind<T>(values: string, parse: (text: string, name: string, problem: (message: string) => never) => T): SettingKind<T> {
  class Problem {
    constructor(readonly message: string) {}
  }
  const problem = (message: string): never => {
    throw new Problem(message);
  };
  return {
    values,
    schema: (name) =>
      z
        .string()
        .optional()
        .transform((text, ctx): T | undefined => {
          if (text === undefined || text === '') return undefined;
          try {
            return parse(text, name, problem);
          } catch (err) {
            if (!(err instanceof Problem)) throw err;
            ctx.addIssue({ code: 'custom', message: err.message });
            return z.NEVER;
          }
        }),
  };
}

/** Any text (checked where it is used, when at all: `values` says how it must look). */
export function textSetting(values = 'text'): SettingKind<string> {
  return settingKind(values, (text) => text);
}

/** `true` or `false`; anything else is a problem (`NAME must be true or false`). */
export function flagSetting(): SettingKind<boolean> {
  return settingKind('`true` or `false`', (text, name, problem) =>
    text === 'true' ? true : text === 'false' ? false : problem(`${name} must be true or false`),
  );
}

/** On when the text is exactly `true`; any other text is off (the variables that have always read so). */
export function onWhenTrueSetting(): SettingKind<boolean> {
  return settingKind('`true` turns it on; any other value is off', (text) => text === 'true');
}

/**
 * A whole number from `min` (to `max`). The problem reads
 * `<label> must be an integer >= <min>` (or `from <min> to <max>`), `label`
 * being the variable's name unless given; `message` words it otherwise.
 */
export function intSetting(options: { min: number; max?: number; label?: string; message?: (name: string, text: string) => string }): SettingKind<number> {
  const { min, max } = options;
  const range = max === undefined ? `>= ${min}` : `from ${min} to ${max}`;
  return settingKind(max === undefined ? `an integer >= ${min}` : `an integer from ${min} to ${max}`, (text, name, problem) => {
    const n = /^-?\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
    if (Number.isSafeInteger(n) && n >= min && (max === undefined || n <= max)) return n;
    return problem(options.message ? options.message(name, text) : `${options.label ?? name} must be an integer ${range}`);
  });
}

/** One of a few words. */
export function oneOfSetting<const T extends string>(choices: readonly T[], message?: (name: string, text: string) => string): SettingKind<T> {
  const words = choices.map((c) => `\`${c}\``);
  const listed = words.length > 1 ? `${words.slice(0, -1).join(', ')} or ${words.at(-1)}` : words.join('');
  return settingKind(listed, (text, name, problem) =>
    (choices as readonly string[]).includes(text)
      ? (text as T)
      : problem(
          message
            ? message(name, text)
            : `${name} must be ${choices.slice(0, -1).join(', ')}${choices.length > 1 ? ' or ' : ''}${choices.at(-1)}, got ${JSON.stringify(text)}`,
        ),
  );
}

/** A comma-separated list (the items as written, checked where they are used). */
export function listSetting(values: string): SettingKind<string[]> {
  return settingKind(values, (text) => text.split(','));
}

/** An absolute http(s) URL. */
export function urlSetting(message?: (name: string, text: string) => string): SettingKind<string> {
  return settingKind('an http(s) URL', (text, name, problem) => {
    let ok = false;
    try {
      const u = new URL(text);
      ok = u.protocol === 'http:' || u.protocol === 'https:';
    } catch {}
    return ok ? text : problem(message ? message(name, text) : `${name} must be an http(s) URL, got ${JSON.stringify(text)}`);
  });
}
