import type { Kysely } from 'kysely';
import type { Database } from '../ledger/schema.js';
import type { AlertCrossings, AlertEventType, Crossing } from './alerts.js';

/**
 * Crossings in the ledger's `alert_crossings` table (migration 0006). A claim is one statement,
 * insert-if-absent or take over a row whose time has passed, so that of several processes on one
 * database exactly one gets true (the primary key decides; the RETURNING row says who won).
 */
export class KyselyAlertCrossings implements AlertCrossings {
  constructor(private readonly db: Kysely<Database>) {}

  async claim(crossing: Crossing, atMs: number, untilMs: number | null): Promise<boolean> {
    const row = await this.db
      .insertInto('alert_crossings')
      .values({ subject: crossing.subject, event: crossing.event, period: crossing.period, until_ms: untilMs, created_at: atMs })
      .onConflict((oc) =>
        oc
          .columns(['subject', 'event', 'period'])
          .doUpdateSet((eb) => ({ until_ms: eb.ref('excluded.until_ms'), created_at: eb.ref('excluded.created_at') }))
          .where('alert_crossings.until_ms', '<=', atMs),
      )
      .returning('subject')
      .executeTakeFirst();
    return row !== undefined;
  }

  async rearm(subject: string, event: AlertEventType): Promise<void> {
    await this.db.deleteFrom('alert_crossings').where('subject', '=', subject).where('event', '=', event).execute();
  }
}
