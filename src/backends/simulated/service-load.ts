// An inference service's load on the simulated cluster: its modelled request curve (core traffic.ts)
// served by the replicas that run, with the queueing latency that gives.
import { requestRate, serviceLoad } from '../../core/inference/index.js';
import type { ServiceLoadQuery, ServiceLoadReading } from '../port.js';

export function modelledLoad(query: ServiceLoadQuery, ready: number): ServiceLoadReading {
  const { traffic, latency } = query.model;
  const rps = requestRate(traffic, query.at);
  const load = serviceLoad(latency, ready, rps);
  // Requests over the interval: the rate at its middle times its length (the curve is smooth over minutes).
  const span = Math.max(0, query.at - query.sinceMs);
  const requests = Math.round(requestRate(traffic, query.at - span / 2) * (span / 1000));
  return {
    ready,
    rps,
    p95Ms: rps > 0 ? load.p95Ms : null,
    inFlight: load.inFlight,
    gpuUtilization: ready > 0 ? Math.min(1, load.utilization) : null,
    requests,
  };
}
