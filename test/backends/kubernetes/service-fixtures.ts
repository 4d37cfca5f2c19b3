// Shared by the Kubernetes inference tests: a metrics endpoint (a real HTTP server) whose pods report
// a service's requests in flight spread evenly over its serving pods, and the service they create.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export const CREATE_SERVICE = `mutation($input: CreateInferenceServiceInput!) { createInferenceService(input: $input) { id } }`;

export interface InFlightEndpoint {
  /** The services' requests in flight from now on (each serving pod reports its share). */
  set(total: number): void;
  /** The endpoint template for `serviceSignals.endpointUrl`. */
  url: string;
  close(): Promise<void>;
}

/** Pods count as serving when Ready and not terminating, as the backend counts them. */
export async function inFlightEndpoint(
  pods: () => { metadata: any; status?: any }[],
): Promise<InFlightEndpoint> {
  let total = 0;
  const server = createServer((_req, res) => {
    const serving = pods().filter(
      (p) =>
        p.metadata.labels?.['fairway.dev/service-id'] &&
        !p.metadata.deletionTimestamp &&
        p.status?.conditions?.some(
          (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
        ),
    ).length;
    res.end(
      `# TYPE http_requests_in_flight gauge\nhttp_requests_in_flight ${total / Math.max(1, serving)}\n`,
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    set: (n) => {
      total = n;
    },
    url: `http://127.0.0.1:${port}/metrics?pod={pod}&ip={podIP}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A chat service of Borealis on the H100s, 2 GPUs a replica, scaled on requests in flight (4 a replica). */
export function chatService(over: Record<string, unknown> = {}) {
  return {
    name: 'chat',
    container: { image: 'registry.example/chat:1' },
    port: 8080,
    replica: { gpusPerPod: 2, flavors: ['h100-80g'] },
    minReplicas: 1,
    maxReplicas: 6,
    scaling: { signal: 'IN_FLIGHT', target: 4, scaleDownStabilizationSeconds: 0, maxScaleUpStep: 12 },
    ...over,
  };
}
