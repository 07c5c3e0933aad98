import express, { type Request, type Response } from 'express';
import { GatewayError, type GatewayCore, type Principal } from '@farebox/gateway-core';
import { formBody } from './body.js';
import { browserPolicy } from './browser-policy.js';
import { readCookies } from './http.js';
import { appText, escapeHtml, hidden, page, pageHeaders } from './oauth-routes.js';

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
export function approvalRoutes(core: GatewayCore, options: { sessionCookie: string }): express.Router {
  const browser = browserPolicy(core.config);
  const confirmations = core.callConfirmations;
  const router = express.Router();
  const form = formBody({ limit: '4kb', parameterLimit: 10 });

  async function session(req: Request): Promise<Principal | undefined> {
    const token = readCookies(req.headers.cookie)[options.sessionCookie];
    return token ? core.accounts.fromSession(token) : undefined;
  }

  function answer(res: Response, status: number, title: string, body: string) {
    pageHeaders(res);
    res.status(status).type('html').send(page(title, body));
  }

  const failure = (res: Response, err: unknown) => {
    if (!(err instanceof GatewayError)) throw err;
    answer(res, err.status, 'Cannot approve', `<h1>This call cannot be approved</h1><p class="error">${escapeHtml(err.message)}</p>`);
  };

  const summary = (a: Approval) =>
    `<p>${appText(a.client_name, 'Unnamed app')} <span class="muted">(an app you connected)</span> asks to call <strong>${escapeHtml(a.service)}</strong> for <strong>${usd(a.price_usd)}</strong>, paid from your Farebox credits.</p>`;

  function approvalPage(res: Response, principal: Principal, a: Approval) {
    if (a.status !== 'pending') {
      const said = { approved: 'was approved', denied: 'was denied', used: 'was approved and used', expired: 'expired' }[a.status];
      return answer(res, 200, 'Approval', `<h1>This call ${said}</h1>${summary(a)}<p class="muted">Each approval pays for one call.</p>`);
    }
    answer(
      res,
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

  router.use('/approve', (req, res, next) => {
    try {
      browser.checkHost(req);
      next();
    } catch (err) {
      answer(res, 403, 'Cannot approve', `<p class="error">${escapeHtml((err as Error).message)}</p>`);
    }
  });

  router.get('/approve/:id', (req, res, next) => {
    (async () => {
      const principal = await session(req);
      if (!principal) {
        return answer(
          res,
          200,
          'Sign in',
          `<h1>Sign in to approve a paid call</h1>
          <form method="post" action="/auth/login">
            ${hidden('next', req.originalUrl)}
            <label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="email" required>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" minlength="8" required>
            <div class="row"><button class="primary" type="submit">Sign in</button></div>
          </form>`,
        );
      }
      try {
        approvalPage(res, principal, await confirmations.approval(principal.user.id, String(req.params.id)));
      } catch (err) {
        failure(res, err);
      }
    })().catch(next);
  });

  router.post('/approve/:id', form, (req, res, next) => {
    (async () => {
      try {
        browser.checkOrigin(req);
      } catch (err) {
        return answer(res, 403, 'Cannot approve', `<p class="error">${escapeHtml((err as Error).message)}</p>`);
      }
      const principal = await session(req);
      if (!principal) return answer(res, 401, 'Cannot approve', '<p class="error">your session expired: open the approval link again</p>');
      try {
        browser.checkCsrf(req, principal);
        const a = await confirmations.decide(principal.user.id, String(req.params.id), (req.body as Record<string, unknown> | undefined)?.decision);
        const done = a.status === 'approved' ? 'Approved' : 'Denied';
        answer(
          res,
          200,
          done,
          `<h1>${done}</h1>${summary(a)}<p>${
            a.status === 'approved'
              ? 'Go back to the app: it can now make this call (once), until the approval expires.'
              : 'Nothing was charged. The app cannot make this call with this approval.'
          }</p>`,
        );
      } catch (err) {
        failure(res, err);
      }
    })().catch(next);
  });

  return router;
}
