import { useEffect, useRef, useState } from 'react';
import type { AnalyticsPoint } from './gateway.js';
import { formatBaseUnits } from './format.js';

const H = 220;
const PAD = { top: 16, right: 12, bottom: 28, left: 64 };

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const exp = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= v) return m * exp;
  return 10 * exp;
}

/** Daily net earnings as an inline SVG bar chart, with the same figures in a table for screen readers. */
export function EarningsChart({ points }: { points: AnalyticsPoint[] }) {
  // Drawn at the figure's real width, so labels keep their size on a phone.
  const ref = useRef<HTMLElement>(null);
  const [W, setW] = useState(640);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(([entry]) => entry && setW(Math.max(260, Math.round(entry.contentRect.width))));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  if (points.length === 0) return <p className="empty">No days in range.</p>;
  const max = niceMax(Math.max(...points.map((p) => p.earned_base_units)));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const slot = innerW / points.length;
  const bar = Math.max(1, Math.min(28, slot * 0.7));
  const y = (v: number) => PAD.top + innerH - (v / max) * innerH;
  const ticks = [0, 0.5, 1].map((f) => f * max);
  const labelEvery = Math.ceil(points.length / Math.max(2, Math.floor(innerW / 70)));
  const dayLabel = (d: string) => new Date(`${d}T00:00:00Z`).toLocaleDateString(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
  const anyEarnings = points.some((p) => p.earned_base_units > 0);
  return (
    <figure className="chart" ref={ref}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="chart-title chart-desc" data-testid="earnings-chart">
        <title id="chart-title">Net earnings per day</title>
        <desc id="chart-desc">{`${points.length} days from ${points[0]!.day} to ${points.at(-1)!.day}; highest day ${formatBaseUnits(Math.max(...points.map((p) => p.earned_base_units)))}`}</desc>
        {ticks.map((t) => (
          <g key={t}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} className="grid-line" />
            <text x={PAD.left - 8} y={y(t) + 4} textAnchor="end" className="axis">
              {formatBaseUnits(Math.round(t))}
            </text>
          </g>
        ))}
        {points.map((p, i) => {
          const x = PAD.left + i * slot + (slot - bar) / 2;
          const h = Math.max(p.earned_base_units > 0 ? 2 : 0, innerH - (y(p.earned_base_units) - PAD.top));
          return (
            <g key={p.day}>
              <rect x={x} y={PAD.top + innerH - h} width={bar} height={h} rx={Math.min(3, bar / 3)} className="bar">
                <title>{`${p.day}: ${formatBaseUnits(p.earned_base_units)} from ${p.calls} ${p.calls === 1 ? 'call' : 'calls'}`}</title>
              </rect>
              {(points.length - 1 - i) % labelEvery === 0 ? (
                <text
                  x={i === points.length - 1 ? W - PAD.right : PAD.left + i * slot + slot / 2}
                  y={H - 8}
                  textAnchor={i === points.length - 1 ? 'end' : 'middle'}
                  className="axis"
                >
                  {dayLabel(p.day)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      {!anyEarnings ? <figcaption className="muted small-text">No earnings in this period yet.</figcaption> : null}
      <table className="visually-hidden">
        <caption>Net earnings per day</caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Calls</th>
            <th scope="col">Earned (net)</th>
          </tr>
        </thead>
        <tbody>
          {points.map((p) => (
            <tr key={p.day}>
              <td>{p.day}</td>
              <td>{p.calls}</td>
              <td>{formatBaseUnits(p.earned_base_units)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
