import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { GatewayError } from '../errors.js';

/**
 * Registered endpoints are called by the gateway on users' behalf, so they
 * must never reach the gateway's own network (SSRF). The check runs twice:
 * when an endpoint is registered (a clear 400), and on every connection
 * (`guardedDispatcher`, `guardedFetch`: the addresses and the port at
 * connect), so DNS rebinding to a private address, or to loopback on the
 * gateway's own port, fails at connect.
 */
export interface EndpointPolicy {
  /**
   * Loopback hosts (and plain http to them) are allowed (`FAREBOX_ALLOW_LOOPBACK_ENDPOINTS`, the local
   * stack's example services); private and metadata addresses never are.
   */
  allowLoopback: boolean;
  /** The gateway's own ports: a loopback endpoint on one of them is the gateway itself, refused even when loopback is allowed. */
  ownPorts?: readonly number[];
  /** The gateway's own public origin (`https://farebox.example`): never an endpoint. */
  ownOrigin?: string;
}

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['3fff::', 20],
  ['100::', 64],
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

const METADATA_HOSTS = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/** The 16 bytes of an IPv6 address in any textual form (`::`, embedded dotted quad, zone id), or undefined. */
export function parseIpv6(text: string): Uint8Array | undefined {
  let t = text.toLowerCase().replace(/^\[|\]$/g, '');
  const zone = t.indexOf('%');
  if (zone >= 0) t = t.slice(0, zone);
  if (isIP(t) !== 6) return undefined;
  const last = t.lastIndexOf(':');
  if (t.indexOf('.', last) >= 0) {
    // An embedded dotted quad becomes its two 16-bit words.
    const q = t
      .slice(last + 1)
      .split('.')
      .map(Number);
    t = `${t.slice(0, last + 1)}${((q[0]! << 8) | q[1]!).toString(16)}:${((q[2]! << 8) | q[3]!).toString(16)}`;
  }
  const halves = t.split('::');
  const words = (x: string) => (x === '' ? [] : x.split(':').map((w) => parseInt(w, 16)));
  const left = words(halves[0]!);
  const right = halves.length > 1 ? words(halves[1]!) : [];
  const all = halves.length > 1 ? [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right] : left;
  if (all.length !== 8 || all.some((w) => !(w >= 0 && w <= 0xffff))) return undefined;
  const bytes = new Uint8Array(16);
  all.forEach((w, i) => {
    bytes[2 * i] = w >> 8;
    bytes[2 * i + 1] = w & 255;
  });
  return bytes;
}

const v4 = (b: Uint8Array, at: number, xor = 0) => [0, 1, 2, 3].map((i) => (b[at + i]! ^ xor) & 255).join('.');
const v4At = (b: Uint8Array, at: readonly number[]) => at.map((i) => b[i]!).join('.');
const zeros = (b: Uint8Array, from: number, to: number) => b.slice(from, to).every((x) => x === 0);
/** Where RFC 6052 puts the IPv4 address for a /48, /56, /64 and /96 NAT64 prefix (bits 64-71 are skipped). */
const NAT64_PLACES = [
  [6, 7, 9, 10],
  [7, 9, 10, 11],
  [9, 10, 11, 12],
  [12, 13, 14, 15],
] as const;

/**
 * The IPv4 addresses an IPv6 address carries, judged in its place:
 * IPv4-compatible `::a.b.c.d`, mapped `::ffff:a.b.c.d`, translated
 * `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4
 * `2002::/16`, Teredo `2001::/32` (server and obfuscated client).
 */
export function embeddedIpv4(address: string): string[] {
  const b = parseIpv6(address);
  if (!b) return [];
  const word = (i: number) => (b[2 * i]! << 8) | b[2 * i + 1]!;
  if (zeros(b, 0, 12) && !zeros(b, 12, 16) && !(zeros(b, 12, 15) && b[15] === 1)) return [v4(b, 12)]; // ::a.b.c.d (not ::1)
  if (zeros(b, 0, 10) && word(5) === 0xffff) return [v4(b, 12)]; // ::ffff:a.b.c.d
  if (zeros(b, 0, 8) && word(4) === 0xffff && word(5) === 0) return [v4(b, 12)]; // ::ffff:0:a.b.c.d
  if (word(0) === 0x64 && word(1) === 0xff9b && zeros(b, 4, 12)) return [v4(b, 12)]; // NAT64 well-known (/96 only)
  if (word(0) === 0x64 && word(1) === 0xff9b && word(2) === 1) {
    // NAT64 local-use 64:ff9b:1::/48 (RFC 8215) takes any RFC 6052 prefix length: every place an IPv4 can sit is judged,
    // the worst wins. A place that reads as 0.0.0.0/8 (the zero padding of the other forms; no translator reaches it) is
    // left out unless nothing else is there.
    const places = [...new Set(NAT64_PLACES.map((at) => v4At(b, at)))];
    const carried = places.filter((a) => !a.startsWith('0.'));
    return carried.length ? carried : places;
  }
  if (word(0) === 0x2002) return [v4(b, 2)]; // 6to4
  if (word(0) === 0x2001 && word(1) === 0) return [v4(b, 4), v4(b, 12, 0xff)]; // Teredo server, client
  return [];
}

/** 'public', 'loopback' or 'blocked' for one IP address. */
export function classifyAddress(address: string): 'public' | 'loopback' | 'blocked' {
  const carried = embeddedIpv4(address);
  if (carried.length) {
    const kinds = carried.map((a) => classifyAddress(a));
    // Translated forms reach the IPv4 they carry: judged as it (the worst of them for Teredo).
    return kinds.includes('blocked') ? 'blocked' : kinds.includes('loopback') ? 'loopback' : 'public';
  }
  const family = isIP(address);
  if (family === 0) return 'blocked';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (loopback.check(address, type)) return 'loopback';
  if (blocked.check(address, type)) return 'blocked';
  return 'public';
}

function refuse(message: string): never {
  throw new GatewayError('BAD_REQUEST', message);
}

function allowed(address: string, policy: EndpointPolicy): boolean {
  const kind = classifyAddress(address);
  return kind === 'public' || (kind === 'loopback' && policy.allowLoopback);
}

const PRIVATE = 'endpoint resolves to a private or reserved address';
const ITSELF = 'endpoint is the gateway itself';

/** Why a connection to `address`:`port` is refused under the policy, or undefined when it is allowed. */
function refusal(address: string, port: number, policy: EndpointPolicy): string | undefined {
  if (!allowed(address, policy)) return PRIVATE;
  if (policy.ownPorts?.includes(port) && classifyAddress(address) === 'loopback') return ITSELF;
  return undefined;
}

function blockedError(hostname: string, reason: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(`refusing to connect to ${hostname}: ${reason.replace(/^endpoint /, '')}`);
  e.code = 'EFAREBOX_BLOCKED';
  return e;
}

/** A URL's origin without the root dot of its host (`https://farebox.example.` is `https://farebox.example`). */
function originOf(url: URL): string {
  const host = url.host.replace(/\.(?=:\d+$|$)/, '');
  return `${url.protocol}//${host}`;
}

type Lookup = (hostname: string) => Promise<LookupAddress[]>;

const defaultLookup: Lookup = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/**
 * Checks an endpoint for registration: https (or http to loopback in local
 * mode), no credentials in the URL, and every address the host resolves to
 * public. Returns the parsed URL or throws a 400 with the reason.
 */
export async function checkEndpoint(endpoint: string, policy: EndpointPolicy, lookup: Lookup = defaultLookup): Promise<URL> {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return refuse('endpoint must be an absolute URL');
  }
  if (url.username || url.password) refuse('endpoint must not contain credentials');
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (METADATA_HOSTS.has(host)) refuse('endpoint host is not allowed');
  if (url.protocol !== 'https:' && url.protocol !== 'http:') refuse('endpoint must use https');
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = (await lookup(host)).map((a) => a.address);
    } catch {
      return refuse('endpoint host does not resolve');
    }
    if (addresses.length === 0) refuse('endpoint host does not resolve');
  }
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  for (const address of addresses) {
    if (!allowed(address, policy)) refuse(PRIVATE);
  }
  if (policy.ownOrigin && originOf(url) === originOf(new URL(policy.ownOrigin))) refuse(ITSELF);
  for (const address of addresses) {
    const reason = refusal(address, port, policy);
    if (reason) refuse(reason);
  }
  if (url.protocol === 'http:') {
    const allLoopback = addresses.every((a) => classifyAddress(a) === 'loopback');
    if (!(policy.allowLoopback && allLoopback)) refuse('endpoint must use https');
  }
  return url;
}

/**
 * A `lookup` for node:net that refuses addresses outside the policy at
 * connection time; given the port it connects to, also loopback on one of
 * the gateway's own ports.
 */
export function guardedLookup(policy: EndpointPolicy, port?: number) {
  return (
    hostname: string,
    options: { all?: boolean; family?: number } | undefined,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      // One refused address refuses the host: a rebinding answer mixes a public address with the target.
      const reasons = addresses.map((a) => (port === undefined ? (allowed(a.address, policy) ? undefined : PRIVATE) : refusal(a.address, port, policy)));
      const reason = addresses.length === 0 ? PRIVATE : reasons.find((r) => r !== undefined);
      if (reason) return callback(blockedError(hostname, reason), '', 0);
      if (options?.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/**
 * An undici connector that applies the policy to every connection: an IP
 * literal is judged before connecting (node:net does not look it up), a host
 * name by the addresses it resolves to at that moment, both with the port.
 */
export function guardedConnector(policy: EndpointPolicy): buildConnector.connector {
  const byPort = new Map<number, buildConnector.connector>();
  return (options, callback) => {
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    const host = options.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      const reason = refusal(host, port, policy);
      if (reason) return callback(blockedError(host, reason), null);
    }
    let connect = byPort.get(port);
    if (!connect) byPort.set(port, (connect = buildConnector({ lookup: guardedLookup(policy, port) as never })));
    connect(options, callback);
  };
}

/** An undici dispatcher whose every connection goes through {@link guardedConnector}. */
export function guardedDispatcher(policy: EndpointPolicy, options: Omit<Agent.Options, 'connect'> = {}): Agent {
  return new Agent({ ...options, connect: guardedConnector(policy) });
}

/** A `fetch` whose every connection goes through {@link guardedConnector} (for code that takes a fetch, such as the client SDK). */
export function guardedFetch(policy: EndpointPolicy, options: Omit<Agent.Options, 'connect'> = {}): typeof fetch {
  const dispatcher = guardedDispatcher(policy, options);
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    undiciFetch(input as never, { ...(init as object), dispatcher } as never)) as unknown as typeof fetch;
}
