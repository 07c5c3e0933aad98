import { closedPort } from '@farebox/test-kit';
import { openDatabase } from '@farebox/ledger';
import { describe, expect, it } from 'vitest';
import { createDependencyTracker, isUnreachable } from '../src/observability/dependencies.js';
import { createLogger } from '../src/observability/log.js';
import { createMetrics } from '../src/observability/metrics.js';
import { asDatabaseUnavailable, DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable } from '../src/db-errors.js';
import { GatewayError } from '../src/errors.js';

function tracker() {
  const lines: Array<Record<string, unknown>> = [];
  const metrics = createMetrics();
  const logger = createLogger({ level: 'info', destination: { write: (l: string) => void lines.push(JSON.parse(l)) } });
  let t = 0;
  const deps = createDependencyTracker({ logger, metrics, now: () => t });
  const sample = async (series: string) => {
    const line = (await metrics.registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };
  return { deps, lines, sample, advance: (ms: number) => (t += ms) };
}

describe('dependency tracker', () => {
  it('logs one warn line when a dependency goes down and one info line when it is back, however often it is told, and moves the metrics', async () => {
    const { deps, lines, sample, advance } = tracker();
    deps.watch('redis');
    expect(deps.snapshot()).toEqual({ redis: { state: 'unknown', since: null } });
    deps.up('redis');
    deps.up('redis');
    // The first answer at start is no news.
    expect(lines).toEqual([]);
    expect(await sample('farebox_dependency_up{dependency="redis"}')).toBe(1);
    for (let i = 0; i < 100; i++) deps.down('redis', i === 0 ? 'connect ECONNREFUSED 127.0.0.1:6390' : 'again');
    advance(5_200);
    for (let i = 0; i < 100; i++) deps.up('redis');
    expect(lines.map((l) => [l.level, l.event, l.dependency, l.state, l.msg])).toEqual([
      ['warn', 'dependency', 'redis', 'down', 'redis is down: connect ECONNREFUSED 127.0.0.1:6390'],
      ['info', 'dependency', 'redis', 'up', 'redis is back (down 5.2 s)'],
    ]);
    expect(await sample('farebox_dependency_up{dependency="redis"}')).toBe(1);
    expect(await sample('farebox_dependency_transitions_total{dependency="redis",to="down"}')).toBe(1);
    expect(await sample('farebox_dependency_transitions_total{dependency="redis",to="up"}')).toBe(1);
    // A dependency down from the start is said at once; nothing is said once the gateway closes.
    deps.down('rpc', 'fetch failed');
    deps.stop();
    deps.up('rpc');
    deps.down('redis', 'connection closed');
    expect(lines.slice(2).map((l) => l.msg)).toEqual(['rpc is down: fetch failed']);
  });

  it('says nothing of a quiet down nor of its return (the search model says it), yet moves the metrics; a loud down after it is warned', async () => {
    const { deps, lines, sample } = tracker();
    deps.down('model', 'embedding model is downloading', { quiet: true });
    deps.up('model');
    expect(lines).toEqual([]);
    expect(await sample('farebox_dependency_transitions_total{dependency="model",to="down"}')).toBe(1);
    expect(await sample('farebox_dependency_transitions_total{dependency="model",to="up"}')).toBe(1);
    deps.down('model', 'model failed to load');
    deps.up('model');
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'model is down: model failed to load'],
      ['info', 'model is back (down 0.0 s)'],
    ]);
  });

  it('tells an unreachable server from one that answered with a refusal', async () => {
    const port = await closedPort();
    const refused = await fetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(isUnreachable(refused)).toBe(true);
    expect(isUnreachable(new Error('get_agent failed: connect ECONNREFUSED 127.0.0.1:1'))).toBe(true);
    expect(isUnreachable({ message: 'load account failed', data: { status: 503 } })).toBe(true);
    expect(isUnreachable({ message: 'load account failed: Not Found', data: { status: 404 } })).toBe(false);
    expect(isUnreachable(new GatewayError('BAD_REQUEST', 'service required'))).toBe(false);
  });
});

describe('database unavailable', () => {
  it('classifies a refused connection as the 503 with Retry-After, and a statement error as not one', async () => {
    const port = await closedPort();
    const refused = await openDatabase({ url: `postgres://postgres@127.0.0.1:${port}/test` }).catch((e: unknown) => e);
    expect(isDatabaseUnavailable(refused)).toBe(true);
    const answer = asDatabaseUnavailable(refused)!;
    expect(answer).toBeInstanceOf(GatewayError);
    expect({ status: answer.status, message: answer.message, headers: answer.headers }).toEqual({
      status: 503,
      message: DATABASE_UNAVAILABLE_MESSAGE,
      headers: { 'Retry-After': '5' },
    });
    // An administrator's termination and pg's own connection messages too.
    expect(isDatabaseUnavailable({ code: '57P01', message: 'terminating connection due to administrator command' })).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable({ code: '08006', message: 'connection failure' })).toBe(true);

    const db = await openDatabase({ dataDir: 'memory://' });
    try {
      const syntax = await db.query('SELEC 1').catch((e: unknown) => e);
      expect(isDatabaseUnavailable(syntax)).toBe(false);
      expect(asDatabaseUnavailable(syntax)).toBeUndefined();
      const unique = await db.query('CREATE TABLE t (id int primary key); INSERT INTO t VALUES (1), (1)').catch((e: unknown) => e);
      expect(isDatabaseUnavailable(unique)).toBe(false);
    } finally {
      await db.close();
    }
    // PGlite's start takes seconds on a loaded machine.
  }, 120_000);
});
