import { hash } from 'node:crypto';
import { CompiledQuery } from 'kysely';

/**
 * The SQL texts of the statements written once (preparedQuery), each with the name PostgreSQL keeps
 * it prepared under on each connection (database.ts): the same text has the same name in every process.
 */
const statementNames = new Map<string, string>();

/** The name `sql` is prepared under, when it is a statement written once (undefined: a built query). */
export function preparedStatementName(sql: string): string | undefined {
  return statementNames.get(sql);
}

/**
 * A statement whose SQL is written once: each call only binds its parameters, so running it costs no
 * query building or compiling (what Kysely's builder spends on every query), and the database prepares
 * it once a connection (SQLite: better-sqlite3's statement cache; PostgreSQL: a named statement, so it
 * is parsed and planned once, not on every run). Run it with `db.executeQuery(statement(params))`, on
 * a transaction or on the database.
 */
export function preparedQuery<Row>(sql: string): (parameters: readonly unknown[]) => CompiledQuery<Row> {
  const template = CompiledQuery.raw(sql);
  statementNames.set(template.sql, `tg_${hash('sha256', template.sql, 'hex').slice(0, 24)}`);
  return (parameters) => ({ sql: template.sql, query: template.query, queryId: template.queryId, parameters });
}
