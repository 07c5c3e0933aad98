import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { GatewayError } from '../errors.js';

/**
 * Registered endpoints are called by the gateway on users' behalf, so they
 * must never reach the gateway's own network (SSRF). The check runs twice:
 * when an endpoint is registered (a clear 400), and on every connection
 * (`guardedLookup`), so DNS rebinding to a private address fails at connect.
 */
export interface EndpointPolicy {
  /** Local mode (the devnet): plain http and loopback hosts are allowed; private and metadata addresses still are not. */
  allowLoopback: boolean;
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
] as const) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['100::', 64],
] as const) blocked.addSubnet(net, prefix, 'ipv6');

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

const METADATA_HOSTS = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/** An IPv4 address embedded in an IPv6 one (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96), if any. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return undefined;
}

/** 'public', 'loopback' or 'blocked' for one IP address. */
export function classifyAddress(address: string): 'public' | 'loopback' | 'blocked' {
  const v4 = embeddedIpv4(address);
  if (v4) return classifyAddress(v4);
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
  for (const address of addresses) {
    if (!allowed(address, policy)) refuse('endpoint resolves to a private or reserved address');
  }
  if (url.protocol === 'http:') {
    const allLoopback = addresses.every((a) => classifyAddress(a) === 'loopback');
    if (!(policy.allowLoopback && allLoopback)) refuse('endpoint must use https');
  }
  return url;
}

/**
 * A `lookup` for undici's `connect` option (and node:net) that refuses
 * addresses outside the policy at connection time.
 */
export function guardedLookup(policy: EndpointPolicy) {
  return (
    hostname: string,
    options: { all?: boolean; family?: number } | undefined,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const ok = addresses.filter((a) => allowed(a.address, policy));
      if (ok.length === 0 || ok.length !== addresses.length) {
        const e: NodeJS.ErrnoException = new Error(`refusing to connect to ${hostname}: private or reserved address`);
        e.code = 'EFAREBOX_BLOCKED';
        return callback(e, '', 0);
      }
      if (options?.all) return callback(null, ok);
      const first = ok[0]!;
      callback(null, first.address, first.family);
    });
  };
}
