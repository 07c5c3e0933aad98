/**
 * The CLI speaks CLI: a message that names an HTTP route (the gateway's REST
 * message, `activate publishing first (POST /v1/publisher/activate)`, or the
 * REST client's `GET /v1/me failed: ...`) is said with the `farebox` command
 * to run instead. Every error line the CLI prints goes through
 * {@link cliMessage} (`fail` in program.ts).
 */

/** The `farebox` command for a gateway operation, `METHOD /path` as the contract spells it. */
export const COMMAND_FOR_ROUTE: Readonly<Record<string, string>> = {
  'GET /v1/me': 'farebox whoami',
  'GET /v1/balance': 'farebox balance',
  'GET /v1/wallet': 'farebox balance',
  'POST /v1/topup': 'farebox topup <usd>',
  'GET /v1/transactions': 'farebox transactions',
  'GET /v1/agents': 'farebox search [query]',
  'POST /v1/call': 'farebox call <service> [payload]',
  'GET /v1/api-keys': 'farebox keys list',
  'POST /v1/api-keys': 'farebox keys create <name>',
  'DELETE /v1/api-keys/:id': 'farebox keys revoke <id>',
  'GET /v1/oauth/connections': 'farebox connections list',
  'DELETE /v1/oauth/connections/:id': 'farebox connections revoke <id>',
  'POST /v1/publisher/activate': 'farebox publisher activate <name>',
  'GET /v1/publisher/overview': 'farebox publisher overview',
  'GET /v1/publisher/settlements': 'farebox publisher settlements',
  'GET /v1/publisher/analytics': 'farebox publisher analytics',
  'POST /v1/publisher/settle': 'farebox publisher settle',
  'POST /v1/publisher/links/challenge': 'farebox publisher link --keypair <file>',
  'POST /v1/publisher/links': 'farebox publisher link --keypair <file>',
  'GET /v1/publisher/by-owner/:owner': 'farebox publisher earnings <owner>',
  'POST /v1/agents': 'farebox publisher register',
  'PUT /v1/agents/:service': 'farebox publisher update <service>',
  'DELETE /v1/agents/:service': 'farebox publisher remove <service>',
  'POST /v1/disputes': 'farebox dispute <escrowId> --keypair <file>',
};

const METHOD = '(?:GET|POST|PUT|DELETE|PATCH)';
/** The route a path names: `/v1/agents/echo` is `/v1/agents/:service`, `/v1/api-keys/key_1` is `/v1/api-keys/:id`. */
function routeOf(method: string, path: string): string {
  const exact = `${method} ${path}`;
  if (COMMAND_FOR_ROUTE[exact]) return exact;
  const parent = path.replace(/\/[^/]+$/, '');
  return Object.keys(COMMAND_FOR_ROUTE).find((r) => r.startsWith(`${method} ${parent}/:`)) ?? exact;
}

/** A message as the CLI prints it: no HTTP route, the command to run where there is one. */
export function cliMessage(message: string, gatewayUrl?: string): string {
  const at = gatewayUrl ? ` at ${gatewayUrl}` : '';
  // The REST client's own failures are labelled with the request: say what they mean here.
  // (What the command adds after the reason, e.g. the retry line of `farebox call`, stays last.)
  const noAnswer = new RegExp(`^${METHOD} \\S+ failed: (.*?)(\\. [\\s\\S]*)?$`).exec(message);
  if (noAnswer)
    return `cannot reach the gateway${at}: ${noAnswer[1]} (is it running? \`farebox dev\` starts a local one; --url or FAREBOX_URL names another)${noAnswer[2] ?? ''}`;
  const unexpected = new RegExp(`^${METHOD} \\S+ answered an unexpected body([\\s\\S]*)$`).exec(message);
  if (unexpected) return `the gateway${at} answered an unexpected body${unexpected[1]}: is it a Farebox gateway this CLI knows?`;
  if (new RegExp(`^${METHOD} \\S+ needs a credential`).test(message))
    return 'not signed in: run `farebox login` (browser) or `farebox login --api-key sk_live_...`, or set FAREBOX_API_KEY';
  // A hint in parentheses, `(POST /v1/publisher/activate)`: the command, or nothing when the CLI has none.
  return message
    .replace(new RegExp(` ?\\((${METHOD}) (/[^\\s)]*)\\)`, 'g'), (_all, method: string, path: string) => {
      const command = COMMAND_FOR_ROUTE[routeOf(method, path)];
      return command ? `: ${command}` : '';
    })
    .replace(new RegExp(`(${METHOD}) (/[^\\s),;]*)`, 'g'), (all, method: string, path: string) => {
      const command = COMMAND_FOR_ROUTE[routeOf(method, path)];
      return command ? `\`${command}\`` : all.replace(`${method} `, '');
    });
}
