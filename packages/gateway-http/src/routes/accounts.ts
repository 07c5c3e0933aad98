import { enforceRateLimit } from '@farebox/gateway-core';
import { isFormBody, readApiBody } from '../body.js';
import type { RequestContext } from '../context.js';
import type { RouteKit, RouteSpec } from '../handler.js';
import { readCookies } from '../http.js';

/**
 * Sign-up, sign-in and sign-out (`/auth/*`): a session cookie and the
 * readable CSRF cookie the dashboard echoes; a form post (the sign-in pages
 * of OAuth and approvals) is sent back to its same-origin `next`.
 */
export function accountRoutes({ core, browser, sessionCookie, csrfCookie }: RouteKit): RouteSpec[] {
  const cookieBase = (ctx: RequestContext) => ({ httpOnly: true, sameSite: 'lax' as const, secure: core.config.secureCookies ?? ctx.secure(), path: '/' });
  function setSession(ctx: RequestContext, session: { token: string; csrfToken: string; expiresAt: Date }) {
    ctx.reply.cookie(sessionCookie, session.token, { ...cookieBase(ctx), expires: session.expiresAt });
    // Readable by the dashboard's script, which echoes it in X-CSRF-Token.
    ctx.reply.cookie(csrfCookie, session.csrfToken, { ...cookieBase(ctx), httpOnly: false, expires: session.expiresAt });
  }
  const nextOf = (body: unknown) => (body as { next?: unknown } | undefined)?.next;

  const enter = (kind: 'signup' | 'login', status: number) => async (ctx: RequestContext) => {
    const body = await readApiBody(ctx.req);
    browser.checkBrowser(ctx.req);
    await enforceRateLimit(core.rateLimits, core.config.rateLimits.auth, ctx.ip());
    const { user, session } = await core.accounts[kind](body);
    setSession(ctx, session);
    if (isFormBody(ctx.req)) return void ctx.reply.redirect(303, browser.safeRedirect(nextOf(body)));
    ctx.reply.json(status, { ...(await core.account.me(user)), csrf_token: session.csrfToken });
  };

  return [
    { method: 'POST', path: '/auth/signup', handle: enter('signup', 201) },
    { method: 'POST', path: '/auth/login', handle: enter('login', 200) },
    {
      method: 'POST',
      path: '/auth/logout',
      async handle(ctx) {
        const body = await readApiBody(ctx.req);
        browser.checkBrowser(ctx.req);
        const token = readCookies(ctx.req.headers.cookie)[sessionCookie];
        if (token) {
          const principal = await core.accounts.fromSession(token);
          if (principal) browser.checkCsrf({ headers: ctx.req.headers, parsed: body }, principal);
          await core.accounts.logout(token);
        }
        ctx.reply.clearCookie(sessionCookie, cookieBase(ctx));
        ctx.reply.clearCookie(csrfCookie, { ...cookieBase(ctx), httpOnly: false });
        if (isFormBody(ctx.req)) return void ctx.reply.redirect(303, '/');
        ctx.reply.json(200, { ok: true });
      },
    },
  ];
}
