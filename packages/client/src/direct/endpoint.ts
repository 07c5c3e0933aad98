import { isValidStrKey, manifestUrl } from '@farebox/protocol';
import { z } from 'zod';
import { ClientError, EndpointVerificationError } from '../errors.js';
import { errorText, type Requester } from './http.js';
import type { ServiceRegistry, ServiceTarget } from './types.js';

/** A target resolved to the endpoint to call and the owner its quote must pay. */
export interface ResolvedTarget {
  service?: string;
  endpoint: string;
  owner: string;
}

const ManifestSchema = z.looseObject({ service: z.string(), ownerWallet: z.string() });

/** Endpoint, expected owner and registry name of a target. */
export async function resolveTarget(target: ServiceTarget, registryApi: () => ServiceRegistry): Promise<ResolvedTarget> {
  const spec = typeof target === 'string' ? { service: target } : target;
  if (typeof spec !== 'object' || spec === null) throw new ClientError('CONFIG', 'target must be a service name or { service?, endpoint?, ownerWallet? }');
  if (spec.ownerWallet !== undefined && !isValidStrKey('publicKey', spec.ownerWallet)) throw new ClientError('CONFIG', 'ownerWallet must be a G... public key');
  if (spec.service !== undefined) {
    let agent;
    try {
      agent = await registryApi().getAgent(spec.service);
    } catch (e) {
      if (e instanceof ClientError) throw e;
      throw new ClientError('NETWORK', `cannot read the registry: ${errorText(e)}`, { service: spec.service });
    }
    if (!agent) throw new ClientError('NOT_FOUND', `service "${spec.service}" is not in the registry`, { service: spec.service });
    if (spec.ownerWallet !== undefined && spec.ownerWallet !== agent.owner) {
      throw new ClientError('PAYTO_MISMATCH', `service "${spec.service}" is owned by ${agent.owner} in the registry, not by ${spec.ownerWallet}`, {
        service: spec.service,
      });
    }
    return { service: spec.service, endpoint: spec.endpoint ?? agent.endpoint, owner: agent.owner };
  }
  if (!spec.endpoint) throw new ClientError('CONFIG', 'target needs a service name or an endpoint');
  if (!spec.ownerWallet) {
    throw new ClientError('CONFIG', 'an endpoint without a service name needs ownerWallet: the quote must name a receiver you trust');
  }
  return { endpoint: spec.endpoint, owner: spec.ownerWallet };
}

/** Compares the endpoint's `/manifest` with the resolved registry record; throws {@link EndpointVerificationError} on a mismatch. */
export async function verifyManifest(request: Requester, resolved: ResolvedTarget, signal?: AbortSignal) {
  const url = manifestUrl(resolved.endpoint);
  const { status, json } = await request(url, { method: 'GET', ...(signal ? { signal } : {}) });
  const manifest = ManifestSchema.safeParse(json);
  if (status !== 200 || !manifest.success) {
    throw new EndpointVerificationError(`${url} did not answer with a manifest (HTTP ${status})`, {
      status,
      ...(resolved.service ? { service: resolved.service } : {}),
    });
  }
  const m = manifest.data;
  if (resolved.service !== undefined && m.service !== resolved.service) {
    throw new EndpointVerificationError(`the endpoint ${resolved.endpoint} serves "${m.service}", not "${resolved.service}" as the registry says`, {
      service: resolved.service,
    });
  }
  if (m.ownerWallet !== resolved.owner) {
    throw new EndpointVerificationError(`the endpoint ${resolved.endpoint} is owned by ${m.ownerWallet}, the registry owner is ${resolved.owner}`, {
      ...(resolved.service ? { service: resolved.service } : {}),
    });
  }
  return { service: m.service, ownerWallet: m.ownerWallet, endpoint: resolved.endpoint };
}
