import { credits, fromNano, toNano } from './format.js';

/** One amount of spend: a UTC day, a series (model, account, …) and its cost. */
export interface SpendPoint {
  date: string;
  series: string;
  usage: number;
}

const WIDTH = 720;
const HEIGHT = 220;
const PAD = { left: 56, right: 8, top: 10, bottom: 28 };
/** Colours come from the stylesheet (.series-0 … .series-7): the CSP allows no inline style. */
const COLOURS = 8;

function days(first: string, last: string): string[] {
  const list: string[] = [];
  for (let t = Date.parse(`${first}T00:00:00Z`); t <= Date.parse(`${last}T00:00:00Z`); t += 86_400_000) list.push(new Date(t).toISOString().slice(0, 10));
  return list;
}

/** Spend per UTC day, stacked by series, as a hand-made SVG bar chart (no library, nothing inline). */
export function SpendChart({ points, from, to, label }: { points: SpendPoint[]; from: string; to: string; label: string }) {
  const axis = days(from, to);
  const series = [...new Set(points.map((p) => p.series))].sort();
  const byDay = new Map<string, Map<string, bigint>>();
  for (const p of points) {
    const day = byDay.get(p.date) ?? new Map<string, bigint>();
    day.set(p.series, (day.get(p.series) ?? 0n) + toNano(p.usage));
    byDay.set(p.date, day);
  }
  const totals = axis.map((d) => [...(byDay.get(d)?.values() ?? [])].reduce((a, b) => a + b, 0n));
  const max = totals.reduce((a, b) => (b > a ? b : a), 0n);
  const total = totals.reduce((a, b) => a + b, 0n);
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(axis.length, 1);
  const scale = (nano: bigint) => (max === 0n ? 0 : (Number(nano) / Number(max)) * plotH);
  return (
    <figure class="chart" data-testid="spend-chart" data-total={fromNano(total)}>
      <figcaption>
        {label}: {fromNano(total)} credits over {axis.length} days
      </figcaption>
      {series.length === 0 ? (
        <p class="empty">No spend in this period yet.</p>
      ) : (
        <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={label} class="chart-svg">
          <line x1={PAD.left} x2={WIDTH - PAD.right} y1={PAD.top + plotH} y2={PAD.top + plotH} class="axis" />
          <text x={PAD.left - 6} y={PAD.top + 8} class="tick" text-anchor="end">
            {fromNano(max)}
          </text>
          <text x={PAD.left - 6} y={PAD.top + plotH} class="tick" text-anchor="end">
            0
          </text>
          {axis.map((d, i) => {
            let y = PAD.top + plotH;
            const x = PAD.left + i * slot + slot * 0.15;
            const w = Math.max(slot * 0.7, 1);
            const day = byDay.get(d);
            return (
              <g key={d}>
                {series.map((s, si) => {
                  const v = day?.get(s);
                  if (!v) return null;
                  const h = Math.max(scale(v), 1);
                  y -= h;
                  return (
                    <rect key={s} x={x} y={y} width={w} height={h} class={`bar series-${si % COLOURS}`} data-day={d} data-series={s}>
                      <title>{`${d} · ${s}: ${credits(Number(fromNano(v)))} credits`}</title>
                    </rect>
                  );
                })}
                {((i % 7 === 0 && axis.length - 1 - i >= 4) || i === axis.length - 1) && (
                  <text x={x + w / 2} y={HEIGHT - 8} class="tick" text-anchor="middle">
                    {d.slice(5)}
                  </text>
                )}
              </g>
            );
          })}
        </svg>
      )}
      {series.length > 0 && (
        <ul class="legend">
          {series.map((s, si) => (
            <li key={s}>
              <span class={`swatch series-${si % COLOURS}`} aria-hidden="true" />
              {s}
            </li>
          ))}
        </ul>
      )}
    </figure>
  );
}
