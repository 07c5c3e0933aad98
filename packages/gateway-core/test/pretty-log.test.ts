import { describe, expect, it } from 'vitest';
import { createLogger, formatLogLine, prettyLines } from '@farebox/gateway-core';

/** The local clock of an ISO time, as the pretty lines print it. */
const clockOf = (iso: string) => {
  const d = new Date(iso);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
};

describe('readable log lines', () => {
  it('print a request as one short line: time, level, method, route, status, time taken, who, the request id prefix', () => {
    const line = JSON.stringify({
      level: 'info',
      time: '2026-11-26T11:29:11.552Z',
      service: 'farebox-gateway',
      event: 'request',
      reqId: 'dfca5322-9402-4e87-a3e2-75aa35b0fd5f',
      method: 'GET',
      route: '/v1/agents',
      status: 200,
      ms: 9.64,
      ip: '127.0.0.1',
      principal: 'api_key',
      accountId: 'acct_Xn7RnjN0Ao0Ye6Ue',
      msg: 'request',
    });
    expect(formatLogLine(line)).toBe(`${clockOf('2026-11-26T11:29:11.552Z')} INFO  GET /v1/agents 200 9.64 ms api_key acct_Xn7RnjN0Ao0Ye6Ue req=dfca5322`);
  });

  it('keep the fields of other lines as key=value, an error with its stack below, and colour only when asked', () => {
    const out: string[] = [];
    const log = createLogger({ level: 'info', destination: prettyLines({ write: (t) => void out.push(t) }) });
    log.warn({ event: 'reaper', voided: 2, note: 'two words' }, 'holds returned');
    const err = new Error('connection refused');
    log.error({ err }, 'catalog sync failed');
    expect(out).toHaveLength(2);
    expect(out[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} WARN {2}holds returned event=reaper voided=2 note="two words"\n$/);
    expect(out[1]!.split('\n')[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} ERROR catalog sync failed$/);
    expect(out[1]).toContain('    Error: connection refused\n        at ');
    expect(out.join('')).not.toContain('\u001b[');

    const coloured = formatLogLine(
      JSON.stringify({ level: 'info', time: 0, event: 'request', method: 'POST', route: '/v1/call', status: 502, ms: 3, reqId: 'r' }),
      true,
    );
    expect(coloured).toContain('\u001b[31m502\u001b[0m');
  });

  it('pass a line that is not JSON through as it is', () => {
    expect(formatLogLine('plain text\n')).toBe('plain text');
  });
});
