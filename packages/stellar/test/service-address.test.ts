import { createHash } from 'node:crypto';
import { Keypair } from '@stellar/stellar-sdk';
import { describe, expect, it } from 'vitest';
import { readMuxedAddress, serviceMuxedId, servicePayTo } from '../src/index.js';

describe('the address a service is paid at', () => {
  it('is the treasury muxed with the service’s id: another for every service, the same every time', () => {
    const treasury = Keypair.random().publicKey();
    const echo = servicePayTo(treasury, 'echo');
    expect(echo).toMatch(/^M[A-Z2-7]{68}$/);
    expect(servicePayTo(treasury, 'echo')).toBe(echo);
    expect(servicePayTo(treasury, 'word-count')).not.toBe(echo);
    expect(readMuxedAddress(echo)).toEqual({ account: treasury, id: serviceMuxedId('echo') });
    // sha256("farebox:service:echo"), its first 8 bytes big-endian.
    expect(serviceMuxedId('echo')).toBe(BigInt(`0x${createHash('sha256').update('farebox:service:echo').digest('hex').slice(0, 16)}`).toString());
    expect(readMuxedAddress(treasury)).toBeUndefined();
    expect(() => servicePayTo('not-a-key', 'echo')).toThrow('the treasury must be a G... public key, got "not-a-key"');
  });
});
