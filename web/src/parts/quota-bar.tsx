// One flavor's quota as a bar (the overview's queues, the platform's quota tree).
import { gpus } from './format.js';

/** One flavor's quota: used within the nominal, borrowed beyond it, lent out of it. */
export function QuotaBar(p: {
  flavor: string;
  nominal: number;
  used: number;
  borrowed: number;
  lent: number;
}) {
  const scale = Math.max(p.nominal, p.used) || 1;
  const own = Math.min(p.used, p.nominal);
  const pct = (n: number) => `${(100 * n) / scale}%`;
  return (
    <div class="bar-row">
      <span class="bar-label">{p.flavor}</span>
      <div
        class="bar"
        role="img"
        aria-label={`${p.flavor}: ${gpus(p.used)} used of ${gpus(p.nominal)} nominal, ${gpus(p.borrowed)} borrowed, ${gpus(p.lent)} lent`}
      >
        <span class="own" style={{ width: pct(own) }} />
        <span class="borrowed" style={{ width: pct(p.borrowed) }} />
        <span class="lent" style={{ width: pct(Math.min(p.lent, p.nominal - own)) }} />
      </div>
      <span class="bar-figures">
        {gpus(p.used)}/{gpus(p.nominal)} GPUs · borrowed {gpus(p.borrowed)} · lent {gpus(p.lent)}
      </span>
    </div>
  );
}
