/**
 * Cluster DNS as CoreDNS's kubernetes plugin answers A queries, from a pod of `fromNamespace`
 * (search path `<ns>.svc.cluster.local svc.cluster.local cluster.local`):
 * - `<hostname>.<subdomain>.<ns>.svc.cluster.local` → the podIP of the pod with that spec.hostname and
 *   spec.subdomain, when a headless Service named `<subdomain>` in `<ns>` selects it and it is ready
 *   (Running, Ready, not terminating): what an Indexed Job's pods use to find each other;
 * - `<service>.<ns>.svc.cluster.local` → a Service's clusterIP (a headless one: its first ready pod);
 * - the short forms go through the search path (`<hostname>.<subdomain>`, `<service>`, `….svc`).
 * Anything else: undefined (NXDOMAIN).
 */
import { selectorMatches } from './selectors.js';
import type { Store } from './store.js';

const ZONE = 'svc.cluster.local';

function ready(pod: any): boolean {
  return (
    pod.status?.phase === 'Running' &&
    !pod.metadata.deletionTimestamp &&
    !!pod.status?.podIP &&
    (pod.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True')
  );
}

function endpoints(store: Store, service: any): any[] {
  const selector = service.spec?.selector;
  if (!selector || Object.keys(selector).length === 0) return [];
  return store
    .peekAll('Pod', service.metadata.namespace)
    .filter((p) => ready(p) && selectorMatches({ matchLabels: selector }, p.metadata.labels));
}

/** An absolute name under svc.cluster.local (without the zone), or undefined. */
function lookup(store: Store, labels: string[]): string | undefined {
  if (labels.length === 2) {
    const [name, namespace] = labels as [string, string];
    const service = store.peek('Service', namespace, name);
    if (!service) return undefined;
    if (service.spec?.clusterIP && service.spec.clusterIP !== 'None') return service.spec.clusterIP;
    const ips = endpoints(store, service)
      .map((p) => p.status.podIP as string)
      .sort();
    return ips[0];
  }
  if (labels.length === 3) {
    const [hostname, subdomain, namespace] = labels as [string, string, string];
    const service = store.peek('Service', namespace, subdomain);
    if (service?.spec?.clusterIP !== 'None') return undefined;
    const pod = endpoints(store, service).find(
      (p) => p.spec?.hostname === hostname && p.spec?.subdomain === subdomain,
    );
    return pod?.status.podIP;
  }
  return undefined;
}

export function resolveName(store: Store, name: string, fromNamespace = 'default'): string | undefined {
  const fqdn = name.toLowerCase().replace(/\.$/, '');
  const candidates = name.endsWith('.')
    ? [fqdn]
    : [`${fqdn}.${fromNamespace}.${ZONE}`, `${fqdn}.${ZONE}`, `${fqdn}.cluster.local`, fqdn];
  for (const candidate of candidates) {
    if (!candidate.endsWith(`.${ZONE}`)) continue;
    const found = lookup(store, candidate.slice(0, -(ZONE.length + 1)).split('.'));
    if (found) return found;
  }
  return undefined;
}
