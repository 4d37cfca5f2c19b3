// The autoscaler's guards against flapping (pure), part of decideReplicas' rule: what the service
// itself has shown about how many replicas it needs at a request rate. A signal such as p95 latency
// (or requests in flight, which grow with it) is convex in load, so the HPA's proportional rule,
// with its ±tolerance, finds no count inside the band at some loads and cycles between two (down
// once the down window has passed, up again a minute later); it overshoots on the way up (the
// linear estimate asks for more than the convex signal needs), and a one-interval spike asks for a
// replica the down window removes a few minutes later. So each reading is remembered as a fact about
// the count of replicas that served it: too few (the signal above the tolerance band) at that rate,
// or enough (not above it). A count too few at a rate is too few at any higher rate, and so is any
// smaller count; a count enough at a rate is enough at any lower rate, and so is any larger count.
// - The down guard: no scale-down to a count at or below one found too few while the down window's
//   peak request rate, at that count, would put the signal above the bottom of the tolerance band.
// - The up guard: a scale-up goes no further than the fewest replicas found enough at this rate or a
//   higher one (the HPA would not have moved from them: the signal was within its tolerance).
// A reading that contradicts a fact (a count, or fewer, enough where it was too few; a count, or
// more, too few where it was enough) withdraws it, so a service whose replicas got faster or slower
// does not keep a count it no longer needs, nor stop short of one it now needs.

/** A count of serving replicas, and a request rate (per second) it was found too few or enough at. */
export interface CountAtRate {
  replicas: number;
  rps: number;
}

/** What the service has shown: the counts too few (at their lowest rate) and enough (at their highest). */
export interface Learned {
  tooFew: CountAtRate[];
  enough: CountAtRate[];
}

/** Requests per second of a reading (`requests` over (since, at]); null: its span is unknown. */
export function readingRate(requests: number, at: number, since: number | undefined): number | null {
  if (since === undefined || !(at > since) || !Number.isFinite(requests) || requests < 0) return null;
  return requests / ((at - since) / 1000);
}

const byCount = (a: CountAtRate, b: CountAtRate) => a.replicas - b.replicas;

/**
 * The facts after a reading of `ready` serving replicas at `rps`, `tooFew` when the signal said
 * they were too few. Each list is kept as a staircase (a fact another one implies is dropped):
 * more replicas, higher rate.
 */
export function learn(facts: Learned, ready: number, rps: number, tooFew: boolean): Learned {
  // No serving replica, or no traffic: nothing learned of a count at a rate.
  if (ready <= 0 || !(rps > 0)) return facts;
  const fact = { replicas: ready, rps };
  if (tooFew) {
    // Contradicted: `ready` or fewer found enough at `rps` or a higher rate.
    const enough = facts.enough.filter((e) => !(e.replicas <= ready && e.rps >= rps));
    if (facts.tooFew.some((f) => f.replicas >= ready && f.rps <= rps))
      return { tooFew: facts.tooFew, enough };
    const kept = facts.tooFew.filter((f) => !(f.replicas <= ready && f.rps >= rps));
    return { tooFew: [...kept, fact].sort(byCount), enough };
  }
  // Contradicted: `ready` or more found too few at `rps` or a lower rate.
  const tooFewKept = facts.tooFew.filter((f) => !(f.replicas >= ready && f.rps <= rps));
  if (facts.enough.some((e) => e.replicas <= ready && e.rps >= rps))
    return { tooFew: tooFewKept, enough: facts.enough };
  const kept = facts.enough.filter((e) => !(e.replicas >= ready && e.rps <= rps));
  return { tooFew: tooFewKept, enough: [...kept, fact].sort(byCount) };
}

/**
 * The down guard: the fact that refuses going down to `desired` at `peakRps`, if any (the largest
 * count). A count found too few at rate q was above the band there (signal > (1 + tolerance) ×
 * target); at the peak p, as the signal scales with the rate, it would be at (1 + tolerance) × p/q.
 * Down only where that is at most the band's bottom (1 − tolerance): the new count then has the
 * whole band to take a rise of the traffic before it is too few again (a hysteresis of 2 × tolerance).
 */
export function refusingDown(
  facts: Learned,
  desired: number,
  peakRps: number,
  tolerance: number,
): CountAtRate | undefined {
  const below = (1 - tolerance) / (1 + tolerance);
  let found: CountAtRate | undefined;
  for (const f of facts.tooFew)
    if (f.replicas >= desired && peakRps > below * f.rps && (!found || f.replicas > found.replicas))
      found = f;
  return found;
}

/** The up guard: the fewest replicas found enough at `rps` or a higher rate, if any. */
export function enoughAt(facts: Learned, rps: number): CountAtRate | undefined {
  let found: CountAtRate | undefined;
  for (const e of facts.enough) if (e.rps >= rps && (!found || e.replicas < found.replicas)) found = e;
  return found;
}
