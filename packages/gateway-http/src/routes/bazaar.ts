import type { RequestContext } from '../context.js';
import { limitAnonymous, type RouteKit, type RouteSpec } from '../handler.js';

/**
 * The x402 bazaar catalog (docs/search.md, "x402 bazaar"): `GET
 * /discovery/resources` and `GET /discovery/search?query=`, the same under the
 * platform facilitator's base `/x402` (a stock `withBazaar(new
 * HTTPFacilitatorClient({ url: '<gateway>/x402' }))` asks
 * `<url>/discovery/resources`). No credential, the anonymous per-IP limit,
 * CORS open to every origin (read-only, no cookies). The parameters as the
 * URL has them: a repeated one is refused, not merged.
 */
export function bazaarRoutes({ core }: RouteKit): RouteSpec[] {
  const cors = (ctx: RequestContext) => {
    ctx.reply.set('access-control-allow-origin', '*');
    ctx.reply.set('access-control-allow-methods', 'GET, HEAD, OPTIONS');
    // The stock client sends Content-Type (and a facilitator's auth headers) on its GET.
    ctx.reply.set('access-control-allow-headers', 'Content-Type, Authorization');
    ctx.reply.set('access-control-max-age', '600');
  };
  const specs: RouteSpec[] = [];
  for (const base of ['', '/x402']) {
    for (const [name, run] of [
      ['resources', (q: URLSearchParams) => core.bazaar.list(q)],
      ['search', (q: URLSearchParams) => core.bazaar.search(q)],
    ] as const) {
      const path = `${base}/discovery/${name}`;
      specs.push(
        {
          method: 'OPTIONS',
          path,
          handle(ctx) {
            cors(ctx);
            ctx.reply.empty(204);
          },
        },
        {
          method: 'GET',
          path,
          async handle(ctx) {
            cors(ctx);
            await limitAnonymous(core, ctx);
            ctx.reply.json(200, await run(ctx.searchParams()));
          },
        },
      );
    }
  }
  return specs;
}
