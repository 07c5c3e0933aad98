import express, { type Request, type Response } from 'express';
import {
  asDatabaseUnavailable,
  enforceRateLimit,
  GatewayError,
  HTTP_STATUS,
  oauthErrorBody,
  type AuthorizationRequest,
  type GatewayCore,
  type Principal,
} from '@farebox/gateway-core';
import { displayText, formatAmount } from '@farebox/protocol';
import { formBody, inputError, jsonBody, unsafeTextError } from './body.js';
import { browserPolicy } from './browser-policy.js';
import { readCookies } from './http.js';

export interface OAuthRoutesOptions {
  /** Name of the gateway's session cookie (the consent screen signs in with it). */
  sessionCookie: string;
  log?: (message: string, err?: unknown) => void;
}

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * A string the app chose (its name, its redirect host), as a page shows it:
 * without control, format and bidi characters (`displayText`), escaped, and
 * inside `<bdi>`, which isolates what is left (right-to-left text included)
 * from the page's own words around it.
 */
export const appText = (s: string, fallback: string) => `<bdi>${escapeHtml(displayText(s, fallback))}</bdi>`;

/** Clickjacking protection and no caching on every page of the authorization flow. */
export function pageHeaders(res: Response) {
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader(
    'Content-Security-Policy',
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' https: data:; base-uri 'none'; frame-ancestors 'none'",
  );
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  // The sign-in and consent forms post to this origin, which refuses a post without its own Origin.
  // Under `no-referrer` (every other answer's policy) a browser sends `Origin: null` with a form's
  // post, so these pages say `same-origin`: Origin on their own posts, no Referer to the app.
  res.setHeader('Referrer-Policy', 'same-origin');
}

export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Farebox</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;background:#f5f6f8;color:#1c1e21;margin:0;display:flex;justify-content:center}
main{background:#fff;max-width:28rem;width:100%;margin:3rem 1rem;padding:2rem;border-radius:12px;box-shadow:0 2px 12px #0001}
h1{font-size:1.3rem;margin-top:0}ul{padding-left:1.2rem}label{display:block;margin:.8rem 0 .2rem;font-weight:600}
input,select{width:100%;box-sizing:border-box;padding:.55rem;border:1px solid #ccd;border-radius:6px;font:inherit;background:#fff}
.pair{display:flex;gap:.6rem}.pair>*{flex:1;min-width:0}
label.check{display:flex;gap:.5rem;align-items:center;font-weight:normal}label.check input{width:auto}
.row{display:flex;gap:.6rem;margin-top:1.4rem}button{flex:1;padding:.65rem;border-radius:6px;border:1px solid #ccd;font:inherit;cursor:pointer;background:#fff}
button.primary{background:#1d4ed8;border-color:#1d4ed8;color:#fff}.muted{color:#667;font-size:.9rem}.error{color:#b91c1c}
hr{border:0;border-top:1px solid #eee;margin:1.5rem 0}
</style></head><body><main>${body}</main></body></html>`;
}

export const hidden = (name: string, value: string | undefined) =>
  value === undefined ? '' : `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`;

/**
 * The authorization server's HTTP surface: metadata (RFC 8414, RFC 9728),
 * `/register` (RFC 7591), `/authorize` (sign-in and consent), `/token` and
 * `/revoke` (RFC 7009). The protocol lives in the core (`core.oauth`).
 */
export function oauthRoutes(core: GatewayCore, options: OAuthRoutesOptions): express.Router {
  const browser = browserPolicy(core.config);
  const oauth = core.oauth;
  const log = options.log ?? ((m: string, e?: unknown) => console.error(m, e));
  const router = express.Router();
  // The authorization server answers only for the gateway's own host names (DNS rebinding).
  router.use(
    ['/authorize', '/token', '/register', '/revoke', '/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource'],
    (req, res, next) => {
      try {
        browser.checkHost(req);
        next();
      } catch (err) {
        if (req.baseUrl.startsWith('/authorize')) return errorPage(res, (err as Error).message, 403);
        res.status(403).json({ error: 'invalid_request', error_description: (err as Error).message });
      }
    },
  );

  // Forms keep to the text rule of every body (no control characters, no unpaired surrogates).
  const form = formBody({ limit: '64kb', parameterLimit: 50 });
  const json = jsonBody({ limit: '64kb' });

  /** Public, cookie-less endpoints may be called from browser-based clients. */
  const cors = (req: Request, res: Response, next: () => void) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, MCP-Protocol-Version');
    res.setHeader('Access-Control-Max-Age', '600');
    if (req.method === 'OPTIONS') return void res.status(204).end();
    next();
  };

  /** Runs an OAuth endpoint: errors become `{ error, error_description }` (RFC 6749 5.2). */
  const endpoint =
    (fn: (req: Request, res: Response) => Promise<void>) =>
    (req: Request, res: Response): void => {
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Pragma', 'no-cache');
      fn(req, res).catch((thrown: unknown) => {
        const err = asDatabaseUnavailable(thrown) ?? thrown;
        if (err instanceof GatewayError) {
          for (const [k, v] of Object.entries(err.headers ?? {})) res.setHeader(k, v);
          res.status(HTTP_STATUS[err.code]).json(oauthErrorBody(err));
          return;
        }
        const e = err as { type?: string };
        if (e?.type === 'entity.parse.failed') return void res.status(400).json({ error: 'invalid_request', error_description: 'invalid request body' });
        const bad = inputError(err);
        if (bad) return void res.status(bad.status).json({ error: 'invalid_request', error_description: bad.message });
        log('oauth endpoint failed', err);
        res.status(500).json({ error: 'server_error', error_description: 'internal error' });
      });
    };

  const parsed =
    (parser: express.RequestHandler) =>
    (req: Request, res: Response, next: (err?: unknown) => void): void => {
      parser(req, res, (err?: unknown) => (err ? endpoint(() => Promise.reject(err))(req, res) : next()));
    };

  const isForm = (req: Request) => (req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
  const body = (req: Request): Record<string, unknown> => {
    if (!isForm(req)) throw new GatewayError('BAD_REQUEST', 'send the parameters as application/x-www-form-urlencoded', { oauthError: 'invalid_request' });
    return (req.body ?? {}) as Record<string, unknown>;
  };
  const authorization = (req: Request) => (typeof req.headers.authorization === 'string' ? req.headers.authorization : undefined);

  // ---- metadata ---------------------------------------------------------------
  // RFC 9728 metadata of /mcp at the path-suffixed URL (what the 401 challenge names) and at the root (clients that look there first).
  const resourceMetadataPaths = ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'];
  router.options(['/.well-known/oauth-authorization-server', ...resourceMetadataPaths], cors);
  router.get('/.well-known/oauth-authorization-server', cors, (_req, res) => {
    res.json(oauth.metadata());
  });
  router.get(resourceMetadataPaths, cors, (_req, res) => {
    res.json(oauth.resourceMetadata());
  });

  // ---- dynamic client registration --------------------------------------------
  router.options('/register', cors);
  router.post(
    '/register',
    cors,
    parsed(json),
    endpoint(async (req, res) => {
      await enforceRateLimit(core.rateLimits, oauth.rateLimits.register, req.ip ?? 'unknown');
      res.status(201).json(await oauth.register(req.body));
    }),
  );

  // ---- token and revocation -----------------------------------------------------
  router.options(['/token', '/revoke'], cors);
  router.post(
    '/token',
    cors,
    parsed(form),
    endpoint(async (req, res) => {
      await enforceRateLimit(core.rateLimits, oauth.rateLimits.token, req.ip ?? 'unknown');
      res.json(await oauth.token(body(req), authorization(req)));
    }),
  );
  router.post(
    '/revoke',
    cors,
    parsed(form),
    endpoint(async (req, res) => {
      await enforceRateLimit(core.rateLimits, oauth.rateLimits.token, req.ip ?? 'unknown');
      await oauth.revoke(body(req), authorization(req));
      res.status(200).json({});
    }),
  );

  // ---- authorization: sign-in and consent ---------------------------------------
  async function session(req: Request): Promise<Principal | undefined> {
    const token = readCookies(req.headers.cookie)[options.sessionCookie];
    return token ? core.accounts.fromSession(token) : undefined;
  }

  function errorPage(res: Response, message: string, status = 400) {
    pageHeaders(res);
    res
      .status(status)
      .type('html')
      .send(
        page(
          'Cannot authorize',
          `<h1>This app cannot be authorized</h1><p class="error">${escapeHtml(message)}</p><p class="muted">The request did not come from a registered app (or one identified by a usable metadata document), so you are not sent back to it. Close this page and try connecting again.</p>`,
        ),
      );
  }

  function signInPage(res: Response, next: string, client: AuthorizationRequest['client']) {
    pageHeaders(res);
    const fields = (action: string, label: string, autocomplete: string) => `
      <form method="post" action="${action}">
        ${hidden('next', next)}
        <label for="${label}-email">E-mail</label><input id="${label}-email" name="email" type="email" autocomplete="email" required>
        <label for="${label}-password">Password</label><input id="${label}-password" name="password" type="password" autocomplete="${autocomplete}" minlength="8" required>
        <div class="row"><button class="primary" type="submit">${label === 'in' ? 'Sign in' : 'Create account'}</button></div>
      </form>`;
    res
      .status(200)
      .type('html')
      .send(
        page(
          'Sign in',
          `<h1>Sign in to Farebox</h1><p>${appIdentity(client)} wants to connect to your Farebox account. Sign in first.</p>
          ${fields('/auth/login', 'in', 'current-password')}
          <hr><p class="muted">New to Farebox? Create an account (it starts with 5 USD of credits).</p>
          ${fields('/auth/signup', 'up', 'new-password')}`,
        ),
      );
  }

  /**
   * Who the app is, as far as the gateway knows: the name it gave, and for a
   * client identified by its metadata document the host that served it (what
   * the gateway did verify).
   */
  const appIdentity = (client: AuthorizationRequest['client']) =>
    client.metadataDocumentHost
      ? `<strong>${appText(client.clientName, 'Unnamed app')}</strong> <span class="muted">(name given by the app; identified by its metadata document at <strong>${appText(client.metadataDocumentHost, 'unknown host')}</strong>)</span>`
      : `<strong>${appText(client.clientName, 'Unnamed app')}</strong> <span class="muted">(name given by the app, not verified)</span>`;

  function consentPage(
    res: Response,
    principal: Principal,
    request: AuthorizationRequest,
    opts: { error?: string; policy?: ConsentPolicyFields; confirmAbove?: string; appConfirms?: boolean } = {},
  ) {
    const p = opts.policy ?? { limit_usd: '', limit_period: 'day', allowed_services: '', max_call_usd: '' };
    const periods = [
      ['day', 'per day (UTC)'],
      ['week', 'per week (UTC, from Monday)'],
      ['month', 'per month (UTC)'],
      ['total', 'in total'],
    ]
      .map(([v, text]) => `<option value="${v}"${p.limit_period === v ? ' selected' : ''}>${text}</option>`)
      .join('');
    pageHeaders(res);
    const back = new URL(request.redirectUri);
    const scopes = request.scopes.map((s) => `<li>${escapeHtml(oauth.scopes[s])}</li>`).join('');
    res
      .status(opts.error ? 400 : 200)
      .type('html')
      .send(
        page(
          'Authorize',
          `<h1>Connect ${appText(request.client.clientName, 'Unnamed app')} to Farebox?</h1>
          <p>${appIdentity(request.client)} asks to use the account <strong>${escapeHtml(principal.user.email)}</strong>. It will be able to:</p>
          <ul>${scopes}</ul>
          <form method="post" action="/authorize">
            ${hidden('_csrf', principal.csrfToken)}
            ${hidden('response_type', 'code')}
            ${hidden('client_id', request.client.clientId)}
            ${hidden('redirect_uri', request.redirectUri)}
            ${hidden('scope', request.scopes.join(' '))}
            ${hidden('state', request.state)}
            ${hidden('code_challenge', request.codeChallenge)}
            ${hidden('code_challenge_method', 'S256')}
            ${hidden('resource', request.resource)}
            <label for="limit">Spending limit (USD, optional)</label>
            <div class="pair">
              <input id="limit" name="limit_usd" inputmode="decimal" placeholder="no limit" value="${escapeHtml(p.limit_usd)}">
              <select id="period" name="limit_period" aria-label="Period of the spending limit">${periods}</select>
            </div>
            <p class="muted">Calls this app makes are refused once it has spent this much in the period. You can change this or disconnect it at any time under Credentials.</p>
            <label for="services">Services it may call (optional)</label>
            <input id="services" name="allowed_services" placeholder="every service" value="${escapeHtml(p.allowed_services)}">
            <p class="muted">Service names separated by commas, such as echo, word-count. Empty: every service.</p>
            <label for="max-call">Most it may pay for one call (USD, optional)</label>
            <input id="max-call" name="max_call_usd" inputmode="decimal" placeholder="no maximum" value="${escapeHtml(p.max_call_usd)}">
            <label for="confirm">Ask me to confirm each call above (USD)</label>
            <input id="confirm" name="confirm_above_usd" inputmode="decimal" placeholder="never" value="${escapeHtml(opts.confirmAbove ?? '0.10')}">
            <p class="muted">Above this price, and when a call would leave less than 10 % of the limit, you approve the call first on a Farebox page the app opens or links to. 0: every paid call; empty: never by price.</p>
            <label class="check"><input type="checkbox" name="confirm_by_app" value="on"${opts.appConfirms ? ' checked' : ''}> Let this app confirm calls for me</label>
            <p class="muted">Ticked, the app itself answers these confirmations (in its own dialog): Farebox then takes the app's word that you agreed. Leave it unticked unless you trust the app to ask you.</p>
            ${opts.error ? `<p class="error">${escapeHtml(opts.error)}</p>` : ''}
            <div class="row"><button type="submit" name="decision" value="deny">Deny</button><button class="primary" type="submit" name="decision" value="allow">Allow</button></div>
          </form>
          <p class="muted">After your choice you are sent back to ${appText(back.origin, back.protocol)}.</p>`,
        ),
      );
  }

  router.get('/authorize', (req, res, next) => {
    (async () => {
      const unsafe = unsafeTextError(req.query);
      if (unsafe) return errorPage(res, unsafe.message);
      // A client_id URL makes the gateway fetch a document: such requests share the per-IP limit of /register.
      if (typeof req.query.client_id === 'string' && req.query.client_id.startsWith('https://')) {
        try {
          await enforceRateLimit(core.rateLimits, oauth.rateLimits.register, req.ip ?? 'unknown');
        } catch (err) {
          if (!(err instanceof GatewayError)) throw err;
          for (const [k, v] of Object.entries(err.headers ?? {})) res.setHeader(k, v);
          return errorPage(res, 'too many authorization requests with a client metadata document from this address; try again in a minute', 429);
        }
      }
      const check = await oauth.checkAuthorization(req.query as Record<string, unknown>);
      if (check.kind === 'error_page') return errorPage(res, check.message);
      if (check.kind === 'redirect') return res.redirect(302, check.location);
      const principal = await session(req);
      if (!principal) return signInPage(res, req.originalUrl, check.request.client);
      const existing = await oauth.existingConnection(principal.user.id, check.request.client.clientId);
      const { above, appConfirms } = await core.callConfirmations.forClient(principal.user.id, check.request.client.clientId);
      consentPage(res, principal, check.request, {
        policy: policyFields(existing?.policy),
        confirmAbove: above === null ? '' : formatAmount(above, { trim: true }),
        appConfirms,
      });
    })().catch(next);
  });

  router.post('/authorize', form, (req, res, next) => {
    (async () => {
      const input = (req.body ?? {}) as Record<string, unknown>;
      try {
        browser.checkOrigin(req);
      } catch (err) {
        return errorPage(res, (err as Error).message, 403);
      }
      const principal = await session(req);
      if (!principal) return errorPage(res, 'your session expired; start connecting again from the app', 401);
      try {
        browser.checkCsrf(req, principal);
      } catch (err) {
        return errorPage(res, (err as Error).message, 403);
      }
      const check = await oauth.checkAuthorization(input);
      if (check.kind === 'error_page') return errorPage(res, check.message);
      if (check.kind === 'redirect') return res.redirect(303, check.location);
      if (input.decision !== 'allow') return res.redirect(303, oauth.deny(check.request));
      try {
        // The confirmation threshold is checked before anything is granted; absent from the form: the defaults.
        // An unticked checkbox sends nothing: the app confirms only when the owner ticked it on this page.
        const confirm = core.callConfirmations.parseSettings({
          ...(input.confirm_above_usd === undefined ? {} : { confirm_above_usd: input.confirm_above_usd }),
          ...(input.confirm_below_left_percent === undefined ? {} : { confirm_below_left_percent: input.confirm_below_left_percent }),
          confirm_by_app: input.confirm_by_app === 'on',
        });
        const location = await oauth.approve(principal.user, check.request, input);
        await core.callConfirmations.setForClient(principal.user.id, check.request.client.clientId, confirm);
        return res.redirect(303, location);
      } catch (err) {
        if (err instanceof GatewayError && err.code === 'BAD_REQUEST') {
          return consentPage(res, principal, check.request, {
            error: err.message,
            policy: {
              limit_usd: formText(input.limit_usd ?? input.daily_limit_usd),
              limit_period: formText(input.limit_period) || 'day',
              allowed_services: formText(input.allowed_services),
              max_call_usd: formText(input.max_call_usd),
            },
            ...(typeof input.confirm_above_usd === 'string' ? { confirmAbove: input.confirm_above_usd } : {}),
            appConfirms: input.confirm_by_app === 'on',
          });
        }
        throw err;
      }
    })().catch(next);
  });

  return router;
}

/** The consent form's spending policy fields, as the page shows them. */
interface ConsentPolicyFields {
  limit_usd: string;
  limit_period: string;
  allowed_services: string;
  max_call_usd: string;
}

/** A form field as text (a repeated field: its values joined). */
const formText = (v: unknown): string => (typeof v === 'string' ? v : Array.isArray(v) ? v.filter((x) => typeof x === 'string').join(', ') : '');

/** A connection's policy as the consent form's fields (a returning user sees what the app has now). */
function policyFields(
  policy: { limit: bigint | null; period: string | null; allowedServices: readonly string[] | null; maxCall: bigint | null } | undefined,
): ConsentPolicyFields {
  const usd = (units: bigint | null | undefined) => (units ? formatAmount(units, { trim: true }) : '');
  return {
    limit_usd: usd(policy?.limit),
    limit_period: policy?.period ?? 'day',
    allowed_services: policy?.allowedServices?.join(', ') ?? '',
    max_call_usd: usd(policy?.maxCall),
  };
}
