import { describe, expect, it } from 'vitest';
import { buildProgram } from '../src/index.js';
import { cliMessage, COMMAND_FOR_ROUTE } from '../src/hints.js';

// The CLI's message table: what it says instead of an HTTP route. (The real error paths, against a
// running gateway and over every route of its served contract: e2e/cli-errors.test.ts.)
const ROUTE = /\b(GET|POST|PUT|DELETE|PATCH) \//;

describe('the CLI says commands, not HTTP routes', () => {
  it('turns the gateway’s activation hint into the command to run', () => {
    expect(cliMessage('activate publishing first (POST /v1/publisher/activate)')).toBe('activate publishing first: farebox publisher activate <name>');
  });

  it('says the gateway did not answer instead of naming the request, keeping what the command added after it', () => {
    expect(cliMessage('GET /v1/me failed: fetch failed', 'http://127.0.0.1:9')).toBe(
      'cannot reach the gateway at http://127.0.0.1:9: fetch failed (is it running? `farebox dev` starts a local one; --url or FAREBOX_URL names another)',
    );
    expect(cliMessage('POST /v1/call failed: fetch failed. To see what became of this call without paying twice, run: farebox call echo {}')).toBe(
      'cannot reach the gateway: fetch failed (is it running? `farebox dev` starts a local one; --url or FAREBOX_URL names another). To see what became of this call without paying twice, run: farebox call echo {}',
    );
    expect(cliMessage('GET /v1/me answered an unexpected body (email: required)', 'http://x')).toBe(
      'the gateway at http://x answered an unexpected body (email: required): is it a Farebox gateway this CLI knows?',
    );
    expect(cliMessage('POST /v1/api-keys needs a credential: pass apiKey or accessToken')).not.toMatch(ROUTE);
  });

  it('names a command for a route with parameters, and drops a route the CLI has no command for', () => {
    expect(cliMessage('see (DELETE /v1/agents/echo)')).toBe('see: farebox publisher remove <service>');
    expect(cliMessage('POST /v1/call takes a JSON body (Content-Type: application/json)')).toBe(
      '`farebox call <service> [payload]` takes a JSON body (Content-Type: application/json)',
    );
    expect(cliMessage('unknown client: register it first (POST /register)')).toBe('unknown client: register it first');
    expect(cliMessage('try GET /v1/operator/whoami, then')).not.toMatch(ROUTE);
    // Messages without a route pass unchanged.
    expect(cliMessage('service echo belongs to another publisher')).toBe('service echo belongs to another publisher');
  });

  it('names only commands the CLI has', () => {
    const program = buildProgram({ stdout: () => undefined, stderr: () => undefined });
    const commands = new Set<string>();
    const walk = (c: typeof program, prefix: string) => {
      for (const sub of c.commands) {
        const name = `${prefix} ${sub.name()}`.trim();
        commands.add(name);
        walk(sub as typeof program, name);
      }
    };
    walk(program, 'farebox');
    for (const [route, command] of Object.entries(COMMAND_FOR_ROUTE)) {
      // The command's words up to its first argument or option.
      const words = command.split(' ');
      const end = words.findIndex((w) => !/^[a-z]+$/.test(w));
      expect(commands, route).toContain(words.slice(0, end === -1 ? undefined : end).join(' '));
    }
  });
});
