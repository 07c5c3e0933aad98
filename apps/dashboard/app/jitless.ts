// Zod (which @farebox/client/gateway validates every answer with) probes once
// whether `new Function` works, to compile faster parsers. The gateway serves
// the dashboard under `Content-Security-Policy: default-src 'self'` (no
// 'unsafe-eval'), so that probe was a CSP violation and a console error on
// every page. Zod's jitless mode never probes nor evals; its configuration
// lives on this global (what `z.config({ jitless: true })` sets), shared by
// every copy of zod on the page, and is read at the first parse. This module
// is imported first by main.tsx, before any answer is parsed.
const holder = globalThis as { __zod_globalConfig?: Record<string, unknown> };
holder.__zod_globalConfig = Object.assign(holder.__zod_globalConfig ?? {}, { jitless: true });

export {};
