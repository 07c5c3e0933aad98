import {
  asDatabaseUnavailable,
  enforceRateLimit,
  GatewayError,
  HTTP_STATUS,
  oauthErrorBody,
  type AuthorizationRequest,
  type Principal,
} from '@farebox/gateway-core';
import { displayText, formatAmount } from '@farebox/protocol';
import { hasBody, inputError, isFormBody, isJsonBody, readFormBody, readJsonBody, unsafeTextError } from '../body.js';
import type { RequestContext } from '../context.js';
import type { RouteKit, RouteSpec } from '../handler.js';
import { readCookies, type Reply } from '../http.js';

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * A string the app chose (its name, its redirect host), as a page shows it:
 * without control, format and bidi characters (`displayText`), escaped, and
 * inside `<bdi>`, which isolates what is left (right-to-left text included)
 * from the page's own words around it.
 */
export const appText = (s: string, fallback: string) => `<bdi>${escapeHtml(displayText(s, fallback))}</bdi>`;

/** Clickjacking protection and no caching on every page of the authorization flow. */
export function pageHeaders(reply: Reply) {
  reply.set('X-Frame-Options', 'DENY');
  reply.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' https: data:; base-uri 'none'; frame-ancestors 'none'");
  reply.set('Cache-Control', 'no-store');
  reply.set('Pragma', 'no-cache');
  // The sign-in and consent forms post to this origin, which refuses a post without its own Origin.
  // Under `no-referrer` (every other answer's policy) a browser sends `Origin: null` with a form's
  // post, so these pages say `same-origin`: Origin on their own posts, no Referer to the app.
  reply.set('Referrer-Policy', 'same-origin');
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
export function oauthRoutes({ core, browser, sessionCookie, log }: RouteKit): RouteSpec[] {
  const oauth = core.oauth;
  const specs: RouteSpec[] = [];
  /** A route of the authorization server: it answers only for the gateway's own host names (DNS rebinding). */
  const add = (method: string, path: string, handle: (ctx: RequestContext) => Promise<void> | void) =>
    specs.push({
      method,
      path,
      async handle(ctx) {
        try {
          browser.checkHost(ctx.req);
        } catch (err) {
          if (path === '/authorize') return errorPage(ctx.reply, (err as Error).message, 403);
          return void ctx.reply.json(403, { error: 'invalid_request', error_description: (err as Error).message });
        }
        await handle(ctx);
      },
    });

  // Forms keep to the text rule of every body (no control characters, no unpaired surrogates).
  const form = (ctx: RequestContext) =>
    hasBody(ctx.req) && isFormBody(ctx.req) ? readFormBody(ctx.req, { limit: 64 * 1024, parameterLimit: 50 }) : Promise.resolve(undefined);
  const json = (ctx: RequestContext) => (hasBody(ctx.req) && isJsonBody(ctx.req) ? readJsonBody(ctx.req, { limit: 64 * 1024 }) : Promise.resolve(undefined));

  /** Public, cookie-less endpoints may be called from browser-based clients. */
  const cors = (reply: Reply) => {
    reply.set('Access-Control-Allow-Origin', '*');
    reply.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    reply.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, MCP-Protocol-Version');
    reply.set('Access-Control-Max-Age', '600');
  };
  const preflight = (ctx: RequestContext) => {
    cors(ctx.reply);
    ctx.reply.empty(204);
  };

  /** Runs an OAuth endpoint: errors become `{ error, error_description }` (RFC 6749 5.2). */
  const endpoint = (fn: (ctx: RequestContext) => Promise<void>) => async (ctx: RequestContext) => {
    cors(ctx.reply);
    ctx.reply.set('Cache-Control', 'no-store');
    ctx.reply.set('Pragma', 'no-cache');
    try {
      await fn(ctx);
    } catch (thrown) {
      const err = asDatabaseUnavailable(thrown) ?? thrown;
      const { reply } = ctx;
      if (err instanceof GatewayError) {
        for (const [k, v] of Object.entries(err.headers ?? {})) reply.set(k, v);
        return void reply.json(HTTP_STATUS[err.code], oauthErrorBody(err));
      }
      const e = err as { type?: string };
      if (e?.type === 'entity.parse.failed') return void reply.json(400, { error: 'invalid_request', error_description: 'invalid request body' });
      const bad = inputError(err);
      if (bad) return void reply.json(bad.status, { error: 'invalid_request', error_description: bad.message });
      log('oauth endpoint failed', err);
      reply.json(500, { error: 'server_error', error_description: 'internal error' });
    }
  };

  const body = (ctx: RequestContext, parsed: unknown): Record<string, unknown> => {
    if (!isFormBody(ctx.req))
      throw new GatewayError('BAD_REQUEST', 'send the parameters as application/x-www-form-urlencoded', { oauthError: 'invalid_request' });
    return (parsed ?? {}) as Record<string, unknown>;
  };
  const authorization = (ctx: RequestContext) => (typeof ctx.req.headers.authorization === 'string' ? ctx.req.headers.authorization : undefined);

  // ---- metadata ---------------------------------------------------------------
  // RFC 9728 metadata of /mcp at the path-suffixed URL (what the 401 challenge names) and at the root (clients that look there first).
  const resourceMetadataPaths = ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'];
  for (const path of ['/.well-known/oauth-authorization-server', ...resourceMetadataPaths]) add('OPTIONS', path, preflight);
  add('GET', '/.well-known/oauth-authorization-server', (ctx) => {
    cors(ctx.reply);
    ctx.reply.json(200, oauth.metadata());
  });
  for (const path of resourceMetadataPaths)
    add('GET', path, (ctx) => {
      cors(ctx.reply);
      ctx.reply.json(200, oauth.resourceMetadata());
    });

  // ---- dynamic client registration --------------------------------------------
  add('OPTIONS', '/register', preflight);
  add(
    'POST',
    '/register',
    endpoint(async (ctx) => {
      const input = await json(ctx);
      await enforceRateLimit(core.rateLimits, oauth.rateLimits.register, ctx.ip());
      ctx.reply.json(201, await oauth.register(input));
    }),
  );

  // ---- token and revocation -----------------------------------------------------
  add('OPTIONS', '/token', preflight);
  add('OPTIONS', '/revoke', preflight);
  add(
    'POST',
    '/token',
    endpoint(async (ctx) => {
      const input = await form(ctx);
      await enforceRateLimit(core.rateLimits, oauth.rateLimits.token, ctx.ip());
      ctx.reply.json(200, await oauth.token(body(ctx, input), authorization(ctx)));
    }),
  );
  add(
    'POST',
    '/revoke',
    endpoint(async (ctx) => {
      const input = await form(ctx);
      await enforceRateLimit(core.rateLimits, oauth.rateLimits.token, ctx.ip());
      await oauth.revoke(body(ctx, input), authorization(ctx));
      ctx.reply.json(200, {});
    }),
  );

  // ---- authorization: sign-in and consent ---------------------------------------
  async function session(ctx: RequestContext): Promise<Principal | undefined> {
    const token = readCookies(ctx.req.headers.cookie)[sessionCookie];
    return token ? core.accounts.fromSession(token) : undefined;
  }

  function errorPage(reply: Reply, message: string, status = 400) {
    pageHeaders(reply);
    reply.html(
      status,
      page(
        'Cannot authorize',
        `<h1>This app cannot be authorized</h1><p class="error">${escapeHtml(message)}</p><p class="muted">The request did not come from a registered app (or one identified by a usable metadata document), so you are not sent back to it. Close this page and try connecting again.</p>`,
      ),
    );
  }

  function signInPage(reply: Reply, next: string, client: AuthorizationRequest['client']) {
    pageHeaders(reply);
    const fields = (action: string, label: string, autocomplete: string) => `
      <form method="post" action="${action}">
        ${hidden('next', next)}
        <label for="${label}-email">E-mail</label><input id="${label}-email" name="email" type="email" autocomplete="email" required>
        <label for="${label}-password">Password</label><input id="${label}-password" name="password" type="password" autocomplete="${autocomplete}" minlength="8" required>
        <div class="row"><button class="primary" type="submit">${label === 'in' ? 'Sign in' : 'Create account'}</button></div>
      </form>`;
    reply.html(
      200,
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
    reply: Reply,
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
    pageHeaders(reply);
    const back = new URL(request.redirectUri);
    const scopes = request.scopes.map((s) => `<li>${escapeHtml(oauth.scopes[s])}</li>`).join('');
    reply.html(
      opts.error ? 400 : 200,
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

  add('GET', '/authorize', async (ctx) => {
    const { reply } = ctx;
    {
      const query = ctx.query();
      const unsafe = unsafeTextError(query);
      if (unsafe) return errorPage(reply, unsafe.message);
      // A client_id URL makes the gateway fetch a document: such requests share the per-IP limit of /register.
      if (typeof query.client_id === 'string' && query.client_id.startsWith('https://')) {
        try {
          await enforceRateLimit(core.rateLimits, oauth.rateLimits.register, ctx.ip());
        } catch (err) {
          if (!(err instanceof GatewayError)) throw err;
          for (const [k, v] of Object.entries(err.headers ?? {})) reply.set(k, v);
          return errorPage(reply, 'too many authorization requests with a client metadata document from this address; try again in a minute', 429);
        }
      }
      const check = await oauth.checkAuthorization(query as Record<string, unknown>);
      if (check.kind === 'error_page') return errorPage(reply, check.message);
      if (check.kind === 'redirect') return void reply.redirect(302, check.location);
      const principal = await session(ctx);
      if (!principal) return signInPage(reply, ctx.req.url, check.request.client);
      const existing = await oauth.existingConnection(principal.user.id, check.request.client.clientId);
      const { above, appConfirms } = await core.callConfirmations.forClient(principal.user.id, check.request.client.clientId);
      consentPage(reply, principal, check.request, {
        policy: policyFields(existing?.policy),
        confirmAbove: above === null ? '' : formatAmount(above, { trim: true }),
        appConfirms,
      });
    }
  });

  add('POST', '/authorize', async (ctx) => {
    const { reply } = ctx;
    {
      const input = ((await form(ctx)) ?? {}) as Record<string, unknown>;
      try {
        browser.checkOrigin(ctx.req);
      } catch (err) {
        return errorPage(reply, (err as Error).message, 403);
      }
      const principal = await session(ctx);
      if (!principal) return errorPage(reply, 'your session expired; start connecting again from the app', 401);
      try {
        browser.checkCsrf({ headers: ctx.req.headers, parsed: input }, principal);
      } catch (err) {
        return errorPage(reply, (err as Error).message, 403);
      }
      const check = await oauth.checkAuthorization(input);
      if (check.kind === 'error_page') return errorPage(reply, check.message);
      if (check.kind === 'redirect') return void reply.redirect(303, check.location);
      if (input.decision !== 'allow') return void reply.redirect(303, oauth.deny(check.request));
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
        return void reply.redirect(303, location);
      } catch (err) {
        if (err instanceof GatewayError && err.code === 'BAD_REQUEST') {
          return consentPage(reply, principal, check.request, {
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
    }
  });

  return specs;
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
