import { CompiledQuery } from 'kysely';

/**
 * A statement whose SQL is written once: each call only binds its parameters, so running it costs no
 * query building or compiling (what Kysely's builder spends on every query). Run it with
 * `db.executeQuery(statement(params))`, on a transaction or on the database.
 */
export function preparedQuery<Row>(sql: string): (parameters: readonly unknown[]) => CompiledQuery<Row> {
  const template = CompiledQuery.raw(sql);
  return (parameters) => ({ sql: template.sql, query: template.query, queryId: template.queryId, parameters });
}
