import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';

/** First path segments the dashboard never answers: the API, auth, OAuth (with the approval page of a paid call), MCP and the devnet. */
export const RESERVED_PREFIXES = ['v1', 'auth', 'health', 'devnet', 'mcp', '.well-known', 'authorize', 'token', 'register', 'revoke', 'approve'] as const;

/** No 'unsafe-eval' or 'unsafe-inline' and no `data:`: the built dashboard needs none (its zod runs jitless; apps/dashboard/README.md), and a test asserts no page trips the policy (apps/gateway/test/dashboard-layout.test.ts). */
export const DASHBOARD_CSP = "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";

/** The built dashboard: `dist/` of @farebox/dashboard, or undefined when it is not installed. */
export function dashboardDir(): string | undefined {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@farebox/dashboard/package.json')), 'dist');
  } catch {
    return undefined;
  }
}

function reserved(path: string): boolean {
  const first = path.split('/')[1] ?? '';
  return (RESERVED_PREFIXES as readonly string[]).includes(first);
}

function securityHeaders(res: Response): void {
  res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
  res.setHeader('X-Frame-Options', 'DENY');
}

/**
 * Serves the web dashboard at `/`: its static files, and `index.html` for any
 * other browser navigation (GET/HEAD accepting HTML) outside the reserved
 * prefixes, so deep links such as `/billing` work. Never answers under
 * {@link RESERVED_PREFIXES}. Without a build it answers `/` with a 503 saying so.
 */
export function serveDashboard(app: express.Express, dir: string | undefined = dashboardDir()): void {
  const index = dir ? join(dir, 'index.html') : undefined;
  const built = () => index !== undefined && existsSync(index);
  const files = dir
    ? express.static(dir, {
        index: false,
        redirect: false,
        fallthrough: true,
        setHeaders: (res, path) => {
          securityHeaders(res as Response);
          res.setHeader('Cache-Control', path.includes(`${join(dir, 'assets')}`) ? 'public, max-age=31536000, immutable' : 'no-cache');
        },
      })
    : undefined;

  app.use((req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || reserved(req.path)) return next();
    const page = () => {
      if (!req.accepts('html') || req.path.startsWith('/assets/')) return next();
      securityHeaders(res);
      res.setHeader('Cache-Control', 'no-cache');
      if (!built()) {
        if (req.path !== '/') return next();
        res.status(503).type('text/plain').send('The dashboard is not built: run `pnpm build` (or `pnpm --filter @farebox/dashboard build`).\n');
        return;
      }
      res.sendFile(index!, (err) => err && next(err));
    };
    if (files && req.path !== '/') return files(req, res, page);
    page();
  });
}
