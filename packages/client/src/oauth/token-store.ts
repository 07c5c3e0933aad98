import { readFile, unlink } from 'node:fs/promises';
import { writeFileAtomic as writeAtomically } from '@farebox/protocol/files';
import { z } from 'zod';
import { OAuthClientError } from './errors.js';

const TokensSchema = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string(),
  refresh_token: z.string().optional(),
  expires_in: z.number().optional(),
  scope: z.string().optional(),
});

const StoredSchema = z.object({
  version: z.literal(1),
  /** The `/mcp` resource these credentials belong to. */
  server: z.string(),
  /** The registered OAuth client, exactly as the MCP SDK handed it over. */
  client: z.looseObject({ client_id: z.string() }).optional(),
  tokens: TokensSchema.optional(),
  /** Epoch ms at which the access token expires (computed from `expires_in` when saved). */
  expires_at: z.number().optional(),
});

export type StoredCredentials = z.infer<typeof StoredSchema>;

/**
 * The token file: read fresh on every use (another process may have
 * refreshed it), written atomically (temp file, fsync, rename) with mode 0600.
 */
export interface TokenStore {
  readonly path: string;
  /** The stored credentials for `server`, or an empty record when the file is missing or belongs to another gateway. */
  read(server: string): Promise<StoredCredentials>;
  write(value: StoredCredentials): Promise<void>;
  /** Removes the file (sign-out). */
  clear(): Promise<void>;
}

export function createTokenStore(path: string): TokenStore {
  return {
    path,
    async read(server) {
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, server };
        throw new OAuthClientError('TOKEN_FILE', `cannot read the token file ${path}: ${(e as Error).message}`);
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      const parsed = StoredSchema.safeParse(json);
      // A damaged file or one for another gateway: start over (it is rewritten at the next sign-in).
      if (!parsed.success || parsed.data.server !== server) return { version: 1, server };
      return parsed.data;
    },
    async write(value) {
      await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
    },
    async clear() {
      await unlink(path).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      });
    },
  };
}

/** Writes `text` to `path` atomically with mode 0600 (the folder is created 0700). */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  try {
    await writeAtomically(path, text);
  } catch (e) {
    throw new OAuthClientError('TOKEN_FILE', `cannot write ${path}: ${(e as Error).message}`);
  }
}
