import { credits, fromNano, nextReset, nextUtcMidnight, toNano, utc } from './format.js';
import type { Credits, KeyStatus } from './views.js';

function Stat({ label, value, id, note }: { label: string; value: string; id: string; note?: string }) {
  return (
    <div class="stat">
      <div class="stat-label">{label}</div>
      <div class="stat-value" data-testid={id}>
        {value}
      </div>
      {note && <div class="stat-note">{note}</div>}
    </div>
  );
}

/** A key's limit, what remains of it, its usage per period, today's free-model requests, and the account's credits. */
export function KeyStatusPanel({ status, credit }: { status: KeyStatus; credit: Credits | undefined }) {
  const reset = nextReset(status.limit_reset);
  const free = status.free_model_daily_requests;
  return (
    <section class="card">
      <h2>
        Key <span class="mono">{status.label}</span>
      </h2>
      <div class="stats">
        <Stat
          id="key-limit"
          label="Limit"
          value={status.limit === null ? 'no limit' : credits(status.limit)}
          note={status.limit_reset ? `resets ${status.limit_reset}` : 'never resets'}
        />
        <Stat
          id="key-remaining"
          label="Remaining"
          value={status.limit_remaining === null ? 'unlimited' : credits(status.limit_remaining)}
          note={reset ? `until ${utc(reset)}` : undefined}
        />
        <Stat id="usage-daily" label="Used today" value={credits(status.usage_daily)} />
        <Stat id="usage-weekly" label="This week" value={credits(status.usage_weekly)} />
        <Stat id="usage-monthly" label="This month" value={credits(status.usage_monthly)} />
        <Stat id="usage-all" label="All time" value={credits(status.usage)} />
        <Stat
          id="free-used"
          label="Free-model requests today"
          value={`${free.used} / ${free.limit}`}
          note={`${free.remaining} left; resets ${utc(nextUtcMidnight())}`}
        />
        {credit && (
          <>
            <Stat id="credits-balance" label="Account balance" value={fromNano(toNano(credit.total_credits) - toNano(credit.total_usage))} />
            <Stat id="credits-total" label="Credits bought" value={credits(credit.total_credits)} note={`${credits(credit.total_usage)} used`} />
          </>
        )}
      </div>
      {status.expires_at && <p class="note">This key expires at {utc(status.expires_at)}.</p>}
    </section>
  );
}
