import type { alertEventTypes } from '../config/schema.js';

/**
 * Alerts before the hard stop: webhook events sent when a key crosses 80% and 100% of its limit in a
 * period, an account's balance falls below a threshold, or a provider is put on cooldown. Each is
 * sent once per crossing across every process sharing the ledger (a crossing is claimed durably before
 * it is sent), retried with backoff, and never awaited by a request. Implementations sit beside this file.
 */
export type AlertEventType = (typeof alertEventTypes)[number];

/** What a webhook receives (the JSON body of one delivery); `test` comes only from the test action. */
export interface AlertEvent {
  /** `evt_…`, the same on every retry of one delivery (also in the X-Tollgate-Event-Id header). */
  id: string;
  type: AlertEventType | 'test';
  /** ISO time the crossing was seen. */
  created_at: string;
  data: Record<string, unknown>;
}

/** One crossing: `subject` (a key, an account, an endpoint), the event, and its period (a key's limit period). */
export interface Crossing {
  subject: string;
  event: AlertEventType;
  period: string;
}

/**
 * Durable record of crossings already alerted, shared by every process on one ledger: exactly one
 * claimant of a crossing gets true, and only it sends the event.
 */
export interface AlertCrossings {
  /**
   * Records the crossing unless it is recorded already and still stands: true for the one caller
   * that recorded it. `untilMs` null: it stands until `rearm`; a time: it stands until then (a
   * cooldown), and a later claim at or past that time records it afresh.
   */
  claim(crossing: Crossing, atMs: number, untilMs: number | null): Promise<boolean>;
  /** Forgets the subject's crossings of this event (every period): the next crossing alerts again. */
  rearm(subject: string, event: AlertEventType): Promise<void>;
}

/** A webhook as the admin API lists it: never its secret, its URL without userinfo or query. */
export interface WebhookStatus {
  id: string;
  url: string;
  events: readonly AlertEventType[];
  /** Deliveries waiting, being sent, or waiting to be retried. */
  pending: number;
  delivered: number;
  /** Deliveries given up on (attempts exhausted or a 4xx answer). */
  failed: number;
  /** Deliveries dropped because too many were pending. */
  dropped: number;
  last_success_at: string | null;
  last_failure_at: string | null;
  last_failure: string | null;
}

/** What the test action answers: whether the receiver took the event (a 2xx) and what it said. */
export interface WebhookTestResult {
  id: string;
  event_id: string;
  delivered: boolean;
  status: number | null;
  error: string | null;
}

/** The webhooks as the admin API (and the dashboard through it) sees them. */
export interface WebhookAdmin {
  list(): WebhookStatus[];
  /** Sends a `test` event to the webhook now (one attempt); undefined when there is no such webhook. */
  test(id: string): Promise<WebhookTestResult | undefined>;
}
