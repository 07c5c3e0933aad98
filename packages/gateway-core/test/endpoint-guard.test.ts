import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEndpoint, classifyAddress, guardedDispatcher, guardedFetch } from '../src/security/endpoint-guard.js';

const resolvesTo =
  (...addresses: string[]) =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
const strict = { allowLoopback: false };
const local = { allowLoopback: true };

describe('checkEndpoint', () => {
  it('accepts a public https endpoint', async () => {
    const url = await checkEndpoint('https://api.example.com/echo', strict, resolvesTo('93.184.216.34'));
    expect(url.href).toBe('https://api.example.com/echo');
  });

  it.each([
    ['plain http to a public host', 'http://api.example.com/', resolvesTo('93.184.216.34'), 'endpoint must use https'],
    ['a private address', 'https://internal.example.com/', resolvesTo('10.1.2.3'), 'endpoint resolves to a private or reserved address'],
    [
      'a host with one private address among public ones',
      'https://mixed.example.com/',
      resolvesTo('93.184.216.34', '192.168.1.5'),
      'endpoint resolves to a private or reserved address',
    ],
    ['the cloud metadata address', 'https://169.254.169.254/latest/meta-data', resolvesTo(), 'endpoint resolves to a private or reserved address'],
    ['the metadata host name', 'https://metadata.google.internal/', resolvesTo('8.8.8.8'), 'endpoint host is not allowed'],
    ['an IPv4-mapped private IPv6 address', 'https://[::ffff:10.0.0.1]/', resolvesTo(), 'endpoint resolves to a private or reserved address'],
    ['a unique-local IPv6 address', 'https://[fd00::1]/', resolvesTo(), 'endpoint resolves to a private or reserved address'],
    ['loopback outside local mode', 'https://127.0.0.1:8443/', resolvesTo(), 'endpoint resolves to a private or reserved address'],
    ['credentials in the URL', 'https://user:pw@api.example.com/', resolvesTo('93.184.216.34'), 'endpoint must not contain credentials'],
    ['a non-http scheme', 'file:///etc/passwd', resolvesTo(), 'endpoint must use https'],
    ['a relative URL', '/echo', resolvesTo(), 'endpoint must be an absolute URL'],
    [
      'a host that does not resolve',
      'https://nowhere.invalid/',
      async () => {
        throw new Error('ENOTFOUND');
      },
      'endpoint host does not resolve',
    ],
  ])('refuses %s', async (_label, endpoint, lookup, message) => {
    await expect(checkEndpoint(endpoint, strict, lookup)).rejects.toThrow(message);
  });

  it('allows http to loopback in local mode only', async () => {
    await expect(checkEndpoint('http://127.0.0.1:4000/', local, resolvesTo())).resolves.toBeInstanceOf(URL);
    await expect(checkEndpoint('http://localhost:4000/', local, resolvesTo('127.0.0.1', '::1'))).resolves.toBeInstanceOf(URL);
    await expect(checkEndpoint('http://10.0.0.2:4000/', local, resolvesTo())).rejects.toThrow('private or reserved');
    await expect(checkEndpoint('http://127.0.0.1:4000/', strict, resolvesTo())).rejects.toThrow();
  });

  it('classifies addresses', () => {
    expect(classifyAddress('8.8.8.8')).toBe('public');
    expect(classifyAddress('2606:4700::1111')).toBe('public');
    expect(classifyAddress('127.0.0.53')).toBe('loopback');
    expect(classifyAddress('::1')).toBe('loopback');
    expect(classifyAddress('100.64.0.1')).toBe('blocked');
    expect(classifyAddress('fe80::1')).toBe('blocked');
    expect(classifyAddress('64:ff9b::a9fe:a9fe')).toBe('blocked');
    expect(classifyAddress('not-an-ip')).toBe('blocked');
  });
});

describe('IPv6 forms that carry an IPv4 address', () => {
  // Each form, carrying loopback (127.0.0.1) and the cloud metadata address (169.254.169.254).
  const forms: Array<[string, string, string]> = [
    ['IPv4-compatible (hex)', '::7f00:1', '::a9fe:a9fe'],
    ['IPv4-compatible (dotted)', '::127.0.0.1', '::169.254.169.254'],
    ['IPv4-mapped', '::ffff:127.0.0.1', '::ffff:a9fe:a9fe'],
    ['IPv4-translated', '::ffff:0:7f00:1', '::ffff:0:169.254.169.254'],
    ['NAT64 well-known', '64:ff9b::7f00:1', '64:ff9b::169.254.169.254'],
    ['NAT64 local-use', '64:ff9b:1::7f00:1', '64:ff9b:1::a9fe:a9fe'],
    ['6to4', '2002:7f00:1::', '2002:a9fe:a9fe::1'],
    ['Teredo (server)', '2001:0:7f00:1::f7f7:f7f7', '2001:0:a9fe:a9fe::f7f7:f7f7'],
    ['Teredo (client, obfuscated)', '2001:0:808:808::80ff:fffe', '2001:0:808:808::5601:5601'],
  ];
  it.each(forms)('%s is judged by the IPv4 it carries', async (_label, loop, metadata) => {
    expect(classifyAddress(loop)).toBe('loopback');
    expect(classifyAddress(metadata)).toBe('blocked');
    await expect(checkEndpoint(`https://[${loop}]/`, strict, resolvesTo())).rejects.toThrow('endpoint resolves to a private or reserved address');
    await expect(checkEndpoint(`https://[${metadata}]/`, local, resolvesTo())).rejects.toThrow('endpoint resolves to a private or reserved address');
  });

  it('judges NAT64 local-use addresses at every place RFC 6052 can put the IPv4 (/48, /56, /64, /96)', async () => {
    // 127.0.0.1 at the /64 place (bits 72-103), 169.254.169.254 at the /48 place: their last 32 bits read as a public 1.0.0.0 and 8.8.8.8.
    for (const address of ['64:ff9b:1:0:7f:0:100:0', '64:ff9b:1:a9fe:a9:fe00:808:808', '64:ff9b:1:7f:0:1:0:0']) {
      expect(classifyAddress(address), address).not.toBe('public');
      await expect(checkEndpoint(`https://[${address}]/`, strict, resolvesTo())).rejects.toThrow('endpoint resolves to a private or reserved address');
    }
    expect(classifyAddress('64:ff9b:1:a9fe:a9:fe00:808:808')).toBe('blocked');
  });

  it('refuses the other reserved IPv6 ranges (site-local, the 3fff::/20 documentation block)', () => {
    expect(classifyAddress('fec0::1')).toBe('blocked');
    expect(classifyAddress('3fff:1::1')).toBe('blocked');
  });

  it('leaves ordinary public IPv6 addresses public and ::1 loopback', () => {
    expect(classifyAddress('2606:4700:4700::1111')).toBe('public');
    expect(classifyAddress('2a00:1450:4001:80b::200e')).toBe('public');
    expect(classifyAddress('::1')).toBe('loopback');
    expect(classifyAddress('2002:808:808::1')).toBe('public');
    expect(classifyAddress('fe80::1%eth0')).toBe('blocked');
  });

  it('refuses the gateway itself even where loopback is allowed: its port on any loopback form, and its public origin', async () => {
    const self = { allowLoopback: true, ownPorts: [8787], ownOrigin: 'https://farebox.example' };
    for (const url of [
      'http://127.0.0.1:8787/auth/signup',
      'http://localhost:8787/',
      'http://[::1]:8787/',
      'http://2130706433:8787/',
      'http://0177.0.0.1:8787/',
      'http://127.1:8787/',
      'http://[::ffff:127.0.0.1]:8787/',
    ]) {
      await expect(checkEndpoint(url, self, resolvesTo('127.0.0.1')), url).rejects.toThrow('endpoint is the gateway itself');
    }
    await expect(checkEndpoint('https://farebox.example/x', self, resolvesTo('93.184.216.34'))).rejects.toThrow('endpoint is the gateway itself');
    await expect(checkEndpoint('https://FAREBOX.example.:443/x', self, resolvesTo('93.184.216.34'))).rejects.toThrow('endpoint is the gateway itself');
    await expect(checkEndpoint('http://127.0.0.1:4101/', self, resolvesTo())).resolves.toBeInstanceOf(URL);
  });
});

describe('every connection is checked again (DNS can change after the check)', () => {
  // Two real services on 127.0.0.1: one stands for the gateway itself (its own port), one for a local example service.
  const hits = { self: 0, other: 0 };
  let self: Server;
  let other: Server;
  let selfPort: number;
  let otherPort: number;
  const listen = async (name: keyof typeof hits) => {
    const server = createServer((_req, res) => {
      hits[name]++;
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return server;
  };
  beforeAll(async () => {
    self = await listen('self');
    other = await listen('other');
    selfPort = (self.address() as AddressInfo).port;
    otherPort = (other.address() as AddressInfo).port;
  });
  afterAll(() => {
    self.close();
    other.close();
  });

  const failure = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
      return `${e.cause?.code ?? e.code}: ${e.cause?.message ?? e.message}`;
    }
    return 'connected';
  };

  it("the dispatcher refuses loopback on the gateway's own port by name or by address, where loopback is allowed, and nothing reaches it", async () => {
    const policy = { allowLoopback: true, ownPorts: [selfPort] };
    const dispatcher = guardedDispatcher(policy);
    for (const host of ['localhost', '127.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]']) {
      expect(await failure(request(`http://${host}:${selfPort}/auth/signup`, { dispatcher, method: 'POST', body: '{}' })), host).toMatch(
        /^EFAREBOX_BLOCKED: refusing to connect to .*: is the gateway itself$/,
      );
    }
    expect(hits.self).toBe(0);
    // Another loopback port is a local example service: allowed.
    const res = await request(`http://localhost:${otherPort}/`, { dispatcher });
    expect(await res.body.json()).toEqual({ ok: true });
    expect(hits.other).toBe(1);
    await dispatcher.close();
  });

  it('the dispatcher refuses loopback entirely where it is not allowed', async () => {
    const dispatcher = guardedDispatcher({ allowLoopback: false });
    for (const host of ['localhost', '127.0.0.1', '[::ffff:127.0.0.1]']) {
      expect(await failure(request(`http://${host}:${otherPort}/`, { dispatcher })), host).toMatch(
        /^EFAREBOX_BLOCKED: refusing to connect to .*: resolves to a private or reserved address$/,
      );
    }
    expect(hits.other).toBe(1);
    await dispatcher.close();
  });

  it("the fetch (the wallet path's client) applies the same rules", async () => {
    const guarded = guardedFetch({ allowLoopback: true, ownPorts: [selfPort] });
    expect(await failure(guarded(`http://localhost:${selfPort}/auth/signup`, { method: 'POST', body: '{}' }))).toMatch(/^EFAREBOX_BLOCKED: /);
    expect(await failure(guarded(`http://127.0.0.1:${selfPort}/`))).toMatch(/^EFAREBOX_BLOCKED: /);
    expect(hits.self).toBe(0);
    const res = await guarded(`http://127.0.0.1:${otherPort}/`);
    expect(await res.json()).toEqual({ ok: true });
    const strictFetch = guardedFetch({ allowLoopback: false });
    expect(await failure(strictFetch(`http://localhost:${otherPort}/`))).toMatch(/^EFAREBOX_BLOCKED: /);
    expect(hits.other).toBe(2);
  });
});
