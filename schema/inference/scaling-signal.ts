import { builder } from '../builder.js';

export const ScalingSignalEnum = builder.enumType('ScalingSignal', {
  values: {
    IN_FLIGHT: { description: 'Requests in flight; the target is per replica.' },
    REQUESTS_PER_SECOND: { description: 'Requests per second; the target is per replica.' },
    P95_LATENCY_MS: { description: 'p95 latency in ms, averaged over the replicas.' },
    GPU_UTILIZATION: { description: 'Mean GPU utilization of the replicas, 0..1.' },
  } as const,
});
