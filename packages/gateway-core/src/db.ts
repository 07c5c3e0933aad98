/** The query interface gateway-core runs on: @farebox/ledger's database (PGlite or PostgreSQL through `pg`). */
export type { Queryable as Db } from '@farebox/ledger';
