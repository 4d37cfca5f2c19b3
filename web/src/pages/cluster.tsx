// Cluster (platform admins): nodes by pool and flavor with their free capacity and its fragmentation,
// the quota tree (cohorts → queues with nominal, used, borrowed and lent), live (queueUpdated of every
// queue), and what it is made of, edited in place: flavors (priced from the price book), cohorts, node
// pools and priority classes. The API decides: anyone else gets its refusal and no edit controls.
import { useQuery } from '@urql/preact';
import { useEffect, useRef } from 'preact/hooks';
import { graphql, type ResultOf } from '../graphql.js';
import { CopyAs } from '../parts/copy.js';
import { useRefetchOn } from '../parts/live.js';
import { Problem } from '../parts/problem.js';
import { PriorityClasses } from './admin-classes.js';
import { Flavors } from './admin-flavors.js';
import { NodePools } from './admin-nodes.js';
import { QuotaTree } from './admin-quota-tree.js';
import { useIsPlatformAdmin } from './admin-shared.js';
import './admin.css';

export const ClusterQuery = graphql(`
  query ConsoleCluster {
    nodePools {
      id
      name
      dedicated
      nodes { id name flavor gpus freeGpus cpuMillis memoryMiB unschedulable }
    }
    cohorts { id name parentName quotas { flavor resource nominal borrowingLimit lendingLimit } }
    queues { id name cohortName tenant { name } usage { flavor resource nominal used borrowed lent } }
    flavors { id name kind gpuModel slicesPerGpu pricePerUnitHour priceEffectiveFrom }
    priceBook {
      currency
      flavorPrices { flavor pricePerUnitHour effectiveFrom current }
      multipliers { priorityClass multiplier effectiveFrom current }
    }
    priorityClasses { name value preemptible description requiresGrant }
    tenants(first: 100) { edges { node { id name } } }
  }
`);
export type ClusterData = ResultOf<typeof ClusterQuery>;

const QueueChanged = graphql(`
  subscription ConsoleClusterQueue($id: ID!) { queueUpdated(id: $id) { id } }
`);

export function ClusterPage() {
  const canEdit = useIsPlatformAdmin();
  const [{ data, error }, refetch] = useQuery({ query: ClusterQuery });
  // After an edit: now, and once more when the scheduler has rebuilt its core from the change (free
  // capacity on a node just added or changed comes from it; no event says when).
  const later = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => void (later.current && clearTimeout(later.current)), []);
  const refresh = () => refetch({ requestPolicy: 'network-only' });
  const reload = () => {
    refresh();
    if (later.current) clearTimeout(later.current);
    later.current = setTimeout(refresh, 1000);
  };
  if (error && !data)
    return (
      <section class="admin">
        <h1>Cluster</h1>
        <Problem error={error} />
      </section>
    );
  return (
    <section class="admin">
      <h1>Cluster</h1>
      {data?.queues.map((q) => (
        <LiveQueue key={q.id} id={q.id} onChange={refresh} />
      ))}
      {data && (
        <>
          <NodePools data={data} canEdit={canEdit} onChanged={reload} />
          <QuotaTree data={data} canEdit={canEdit} onChanged={reload} />
          <Flavors data={data} canEdit={canEdit} onChanged={reload} />
          <PriorityClasses data={data} canEdit={canEdit} onChanged={reload} />
        </>
      )}
      <CopyAs document={ClusterQuery} cli="npx fairway apply -f platform.yaml --check" />
    </section>
  );
}

/** Usage, counts and quota of one queue changed: the page refetches (at most every 500 ms per queue). */
function LiveQueue({ id, onChange }: { id: string; onChange: () => void }) {
  useRefetchOn(QueueChanged, { id }, onChange, false, 500);
  return null;
}
