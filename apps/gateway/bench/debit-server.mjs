// The ceiling of a paid call: an HTTP server doing one durable single-statement
// debit per request and nothing else (node:http + pg, autocommit, so each
// answer waits for its commit). `pnpm bench gateway` runs it in its own
// process next to the gateway, on the same PostgreSQL, with the same load.
//   node debit-server.mjs <database url> <schema> <accounts> <pool size>
// Prints `debit server http://127.0.0.1:<port>` when ready. POST / with
// `x-account: <n>` answers {"balance":"<after>"}, 402 when the balance is 0.
import { createServer } from 'node:http';
import pg from 'pg';

const [url, schema, accounts = '16', poolSize = '10'] = process.argv.slice(2);
if (!url || !schema || !/^[a-z_][a-z0-9_]*$/.test(schema)) {
  console.error('usage: debit-server.mjs <database url> <schema> [accounts] [pool size]');
  process.exit(2);
}
const pool = new pg.Pool({ connectionString: url, max: Number(poolSize), options: `-c search_path=${schema}` });
await pool.query('DROP TABLE IF EXISTS bench_debit');
await pool.query('CREATE TABLE bench_debit (id int PRIMARY KEY, bal bigint NOT NULL CHECK (bal >= 0))');
await pool.query('INSERT INTO bench_debit SELECT g, 1000000000 FROM generate_series(0, $1::int - 1) g', [Number(accounts)]);

// A prepared statement, as the ledger's hot statements are.
const DEBIT = { name: 'bench_debit', text: 'UPDATE bench_debit SET bal = bal - 1 WHERE id = $1 AND bal >= 1 RETURNING bal' };

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const id = Number(req.headers['x-account'] ?? 0);
    pool.query({ ...DEBIT, values: [id] }).then(
      ({ rows }) => {
        const body = rows[0] ? `{"balance":"${rows[0].bal}"}` : '{"error":"insufficient balance"}';
        res.writeHead(rows[0] ? 200 : 402, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      },
      () => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":"internal error"}');
      },
    );
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => console.log(`debit server http://127.0.0.1:${server.address().port}`));
process.on('SIGTERM', () => {
  server.close();
  pool.end().finally(() => process.exit(0));
});
