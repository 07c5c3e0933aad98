import { describe, expect, it } from 'vitest';
import { checkEndpoint, classifyAddress } from '../src/security/endpoint-guard.js';

const resolvesTo = (...addresses: string[]) => async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
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
    ['a host with one private address among public ones', 'https://mixed.example.com/', resolvesTo('93.184.216.34', '192.168.1.5'), 'endpoint resolves to a private or reserved address'],
    ['the cloud metadata address', 'https://169.254.169.254/latest/meta-data', resolvesTo(), 'endpoint resolves to a private or reserved address'],
    ['the metadata host name', 'https://metadata.google.internal/', resolvesTo('8.8.8.8'), 'endpoint host is not allowed'],
    ['an IPv4-mapped private IPv6 address', 'https://[::ffff:10.0.0.1]/', resolvesTo(), 'endpoint resolves to a private or reserved address'],
    ['a unique-local IPv6 address', 'https://[fd00::1]/', resolvesTo(), 'endpoint resolves to a private or reserved address'],
    ['loopback outside local mode', 'https://127.0.0.1:8443/', resolvesTo(), 'endpoint resolves to a private or reserved address'],
    ['credentials in the URL', 'https://user:pw@api.example.com/', resolvesTo('93.184.216.34'), 'endpoint must not contain credentials'],
    ['a non-http scheme', 'file:///etc/passwd', resolvesTo(), 'endpoint must use https'],
    ['a relative URL', '/echo', resolvesTo(), 'endpoint must be an absolute URL'],
    ['a host that does not resolve', 'https://nowhere.invalid/', async () => { throw new Error('ENOTFOUND'); }, 'endpoint host does not resolve'],
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

  it('leaves ordinary public IPv6 addresses public and ::1 loopback', () => {
    expect(classifyAddress('2606:4700:4700::1111')).toBe('public');
    expect(classifyAddress('2a00:1450:4001:80b::200e')).toBe('public');
    expect(classifyAddress('::1')).toBe('loopback');
    expect(classifyAddress('2002:808:808::1')).toBe('public');
    expect(classifyAddress('fe80::1%eth0')).toBe('blocked');
  });

  it('refuses the gateway itself even where loopback is allowed: its port on any loopback form, and its public origin', async () => {
    const self = { allowLoopback: true, ownPorts: [8787], ownOrigin: 'https://farebox.example' };
    for (const url of ['http://127.0.0.1:8787/auth/signup', 'http://localhost:8787/', 'http://[::1]:8787/', 'http://2130706433:8787/', 'http://0177.0.0.1:8787/', 'http://127.1:8787/', 'http://[::ffff:127.0.0.1]:8787/']) {
      await expect(checkEndpoint(url, self, resolvesTo('127.0.0.1')), url).rejects.toThrow('endpoint is the gateway itself');
    }
    await expect(checkEndpoint('https://farebox.example/x', self, resolvesTo('93.184.216.34'))).rejects.toThrow('endpoint is the gateway itself');
    await expect(checkEndpoint('http://127.0.0.1:4101/', self, resolvesTo())).resolves.toBeInstanceOf(URL);
  });
});
