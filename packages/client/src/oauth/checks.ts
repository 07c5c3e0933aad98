import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthClientError } from './errors.js';

// What the OAuth client checks about the servers it signs in with: the
// challenge a refusal carries, the authorization server metadata's issuer
// (RFC 8414 section 3.3) and the authorization response's iss (RFC 9207).

/** The auth-params of a Bearer challenge (`WWW-Authenticate: Bearer error="insufficient_scope", scope="a b"`, RFC 6750 3). */
export function bearerChallenge(header: string | null | undefined): Record<string, string> {
  const params: Record<string, string> = {};
  const bearer = /(?:^|,)\s*Bearer(?:\s+|$)/i.exec(header ?? '');
  if (!header || !bearer) return params;
  const rest = header.slice(bearer.index + bearer[0].length);
  for (const m of rest.matchAll(/\s*([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)/gy)) {
    params[m[1]!.toLowerCase()] ??= m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? '');
  }
  return params;
}

export const scopesOf = (scope: string | undefined) => (scope ?? '').split(' ').filter(Boolean);

/**
 * Discovery as the SDK's `auth()` does it (RFC 9728, then RFC 8414 / OpenID
 * metadata of the first authorization server; without resource metadata, the
 * MCP server's origin), with the check the SDK leaves out: the metadata's
 * `issuer` must be the issuer identifier its well-known URL was built from,
 * character for character (RFC 8414 section 3.3), else its endpoints are not used.
 */
export async function discover(serverUrl: URL, resourceMetadataUrl: URL | undefined): Promise<OAuthDiscoveryState & { issuer: string }> {
  let resourceMetadata: OAuthDiscoveryState['resourceMetadata'];
  let advertised: string | undefined;
  try {
    resourceMetadata = await discoverOAuthProtectedResourceMetadata(serverUrl, resourceMetadataUrl ? { resourceMetadataUrl } : {});
    advertised = resourceMetadata.authorization_servers?.[0];
  } catch {
    // No resource metadata (before MCP 2025-06-18): the MCP server's origin is the authorization server.
  }
  const issuer = advertised ?? serverUrl.origin;
  const metadata = await discoverAuthorizationServerMetadata(issuer);
  if (metadata && metadata.issuer !== issuer) {
    throw new OAuthClientError(
      'GATEWAY',
      `the authorization server metadata of ${issuer} names another issuer, ${metadata.issuer} (RFC 8414 section 3.3 requires the issuer it was asked for): its endpoints are not used, sign-in refused`,
    );
  }
  return {
    issuer,
    authorizationServerUrl: issuer,
    ...(resourceMetadataUrl ? { resourceMetadataUrl: resourceMetadataUrl.href } : {}),
    ...(resourceMetadata ? { resourceMetadata } : {}),
    ...(metadata ? { authorizationServerMetadata: metadata } : {}),
  };
}

/**
 * RFC 9207: the reason an authorization response is refused, or undefined. A
 * response must carry `iss` when the server's metadata advertises
 * `authorization_response_iss_parameter_supported`, and an `iss` it carries
 * must be the issuer exactly (simple string comparison: no trailing-slash or
 * case folding), advertised or not.
 */
export function issRefusal(iss: string | null, issuer: string, advertised: boolean): string | undefined {
  if (iss === null) return advertised ? `the authorization response has no iss although ${issuer} advertises it (RFC 9207): sign-in refused` : undefined;
  if (iss !== issuer) return `the authorization response names the issuer ${iss}, not ${issuer} (RFC 9207): sign-in refused`;
  return undefined;
}
