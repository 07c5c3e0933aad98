import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OAuthClientError } from './errors.js';

/** Opens `url` in the user's browser, best effort: never throws, never waits. */
export function openBrowser(url: string): void {
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true, windowsHide: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // no opener on this machine: the URL is on stderr
  }
}

const page = (title: string, text: string) =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto"><h1>${title}</h1><p>${text}</p></body>`;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A loopback listener on 127.0.0.1 with a free port that receives the
 * authorization response at `/callback`. `refusal` judges a response of this
 * sign-in (its `state` matched) before anything else: the reason it is refused
 * (shown in the browser, and the error), or undefined.
 */
export async function startCallback(
  expectedState: string,
  refusal: (params: URLSearchParams) => string | undefined,
): Promise<{ redirectUrl: string; code: Promise<string>; close(): Promise<void> }> {
  let settle!: { resolve: (v: string) => void; reject: (e: Error) => void };
  const code = new Promise<string>((resolve, reject) => {
    settle = { resolve, reject };
  });
  code.catch(() => undefined);
  let done = false;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback' || req.method !== 'GET') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const html = (status: number, body: string) => res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(body);
    if (done) return html(400, page('Already handled', 'This sign-in was already completed. You can close this tab.'));
    if (url.searchParams.get('state') !== expectedState)
      return html(400, page('Sign-in not recognised', 'This response does not belong to the sign-in in progress. Start again from your MCP client.'));
    done = true;
    const refused = refusal(url.searchParams);
    if (refused) {
      html(400, page('Sign-in refused', `${escapeHtml(refused)}. Nothing was connected; you can close this tab.`));
      return settle.reject(new OAuthClientError('SIGN_IN', refused));
    }
    const error = url.searchParams.get('error');
    if (error) {
      const description = url.searchParams.get('error_description');
      html(
        200,
        page('Not connected', `Farebox was not connected (${escapeHtml(error)}${description ? `: ${escapeHtml(description)}` : ''}). You can close this tab.`),
      );
      return settle.reject(new OAuthClientError('SIGN_IN', `sign-in refused: ${error}${description ? ` (${description})` : ''}`));
    }
    const value = url.searchParams.get('code');
    if (!value) {
      html(400, page('Sign-in failed', 'The response carries no authorization code.'));
      return settle.reject(new OAuthClientError('SIGN_IN', 'the authorization response carries no code'));
    }
    html(200, page('Connected to Farebox', 'You are signed in. You can close this tab and return to your assistant.'));
    settle.resolve(value);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    redirectUrl: `http://127.0.0.1:${port}/callback`,
    code,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
