// The failure of a call at its service, and where its endpoint is (parsed once per endpoint).

export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly quote?: bigint,
  ) {
    super(message);
  }
}

/** A service endpoint as undici dispatches to it (parsed once per endpoint). */
const targets = new Map<string, { origin: string; path: string }>();
export function targetOf(endpoint: string): { origin: string; path: string } {
  let target = targets.get(endpoint);
  if (!target) {
    const url = new URL(endpoint);
    target = { origin: url.origin, path: `${url.pathname}${url.search}` };
    if (targets.size >= 10_000) targets.clear();
    targets.set(endpoint, target);
  }
  return target;
}
