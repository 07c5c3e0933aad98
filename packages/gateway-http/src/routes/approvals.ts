import { GatewayError, type GatewayCore, type Principal } from '@farebox/gateway-core';
import { hasBody, isFormBody, readFormBody } from '../body.js';
import type { RequestContext } from '../context.js';
import type { RouteKit, RouteSpec } from '../handler.js';
import { readCookies, type Reply } from '../http.js';
import { appText, escapeHtml, hidden, page, pageHeaders } from './oauth.js';

type Approval = Awaited<ReturnType<GatewayCore['callConfirmations']['approval']>>;

const usd = (n: number) => `$${n}`;

/**
 * The approval page of one paid call (docs/oauth.md, "Calls the user
 * confirms"): `GET /approve/:id` shows the app, the service and the price to
 * the signed-in owner of the connection; `POST /approve/:id` (session cookie,
 * the session's CSRF token in `_csrf`, the gateway's own Origin) approves or
 * denies it, once, before it expires. The app's retry with the approval's id
 * then runs the call.
 */
export function approvalRoutes({ core, browser, sessionCookie }: RouteKit): RouteSpec[] {
  const confirmations = core.callConfirmations;
  const form = (ctx: RequestContext) =>
    hasBody(ctx.req) && isFormBody(ctx.req) ? readFormBody(ctx.req, { limit: 4 * 1024, parameterLimit: 10 }) : Promise.resolve(undefined);

  async function session(ctx: RequestContext): Promise<Principal | undefined> {
    const token = readCookies(ctx.req.headers.cookie)[sessionCookie];
    return token ? core.accounts.fromSession(token) : undefined;
  }

  function answer(reply: Reply, status: number, title: string, body: string) {
    pageHeaders(reply);
    reply.html(status, page(title, body));
  }

  const failure = (reply: Reply, err: unknown) => {
    if (!(err instanceof GatewayError)) throw err;
    answer(reply, err.status, 'Cannot approve', `<h1>This call cannot be approved</h1><p class="error">${escapeHtml(err.message)}</p>`);
  };

  const summary = (a: Approval) =>
    `<p>${appText(a.client_name, 'Unnamed app')} <span class="muted">(an app you connected)</span> asks to call <strong>${escapeHtml(a.service)}</strong> for <strong>${usd(a.price_usd)}</strong>, paid from your Farebox credits.</p>`;

  function approvalPage(reply: Reply, principal: Principal, a: Approval) {
    if (a.status !== 'pending') {
      const said = { approved: 'was approved', denied: 'was denied', used: 'was approved and used', expired: 'expired' }[a.status];
      return answer(reply, 200, 'Approval', `<h1>This call ${said}</h1>${summary(a)}<p class="muted">Each approval pays for one call.</p>`);
    }
    answer(
      reply,
      200,
      'Approve a paid call',
      `<h1>Approve a paid call?</h1>${summary(a)}
      <p class="muted">Signed in as ${escapeHtml(principal.user.email)}. This approval is for this one call, up to this price, until ${escapeHtml(a.expires_at)}.</p>
      <form method="post" action="/approve/${encodeURIComponent(a.id)}">
        ${hidden('_csrf', principal.csrfToken)}
        <div class="row"><button type="submit" name="decision" value="deny">Deny</button><button class="primary" type="submit" name="decision" value="approve">Approve</button></div>
      </form>`,
    );
  }

  /** The approval pages answer only for the gateway's own host names (DNS rebinding). */
  const ownHost = (handle: (ctx: RequestContext) => Promise<void>) => async (ctx: RequestContext) => {
    try {
      browser.checkHost(ctx.req);
    } catch (err) {
      return answer(ctx.reply, 403, 'Cannot approve', `<p class="error">${escapeHtml((err as Error).message)}</p>`);
    }
    await handle(ctx);
  };

  return [
    {
      method: 'GET',
      path: '/approve/:id',
      handle: ownHost(async (ctx) => {
        const principal = await session(ctx);
        if (!principal) {
          return answer(
            ctx.reply,
            200,
            'Sign in',
            `<h1>Sign in to approve a paid call</h1>
          <form method="post" action="/auth/login">
            ${hidden('next', ctx.req.url)}
            <label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="email" required>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" minlength="8" required>
            <div class="row"><button class="primary" type="submit">Sign in</button></div>
          </form>`,
          );
        }
        try {
          approvalPage(ctx.reply, principal, await confirmations.approval(principal.user.id, String(ctx.params.id)));
        } catch (err) {
          failure(ctx.reply, err);
        }
      }),
    },
    {
      method: 'POST',
      path: '/approve/:id',
      handle: ownHost(async (ctx) => {
        const input = await form(ctx);
        try {
          browser.checkOrigin(ctx.req);
        } catch (err) {
          return answer(ctx.reply, 403, 'Cannot approve', `<p class="error">${escapeHtml((err as Error).message)}</p>`);
        }
        const principal = await session(ctx);
        if (!principal) return answer(ctx.reply, 401, 'Cannot approve', '<p class="error">your session expired: open the approval link again</p>');
        try {
          browser.checkCsrf({ headers: ctx.req.headers, parsed: input }, principal);
          const a = await confirmations.decide(principal.user.id, String(ctx.params.id), (input as Record<string, unknown> | undefined)?.decision);
          const done = a.status === 'approved' ? 'Approved' : 'Denied';
          answer(
            ctx.reply,
            200,
            done,
            `<h1>${done}</h1>${summary(a)}<p>${
              a.status === 'approved'
                ? 'Go back to the app: it can now make this call (once), until the approval expires.'
                : 'Nothing was charged. The app cannot make this call with this approval.'
            }</p>`,
          );
        } catch (err) {
          failure(ctx.reply, err);
        }
      }),
    },
  ];
}
