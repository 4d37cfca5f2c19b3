// Cluster page, nodes by pool and flavor with their free capacity and its fragmentation (free units
// stranded on partly used nodes, which a job that needs a whole node cannot use); pools created, their
// dedication and node list changed, and deleted after a question. Units are GPUs, or slices/shares on
// MIG and time-sliced flavors.
import { useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { gpus } from '../parts/format.js';
import { NamedOptions } from '../parts/options.js';
import { Problem } from '../parts/problem.js';
import { PoolEditor } from './admin-pool-editor.js';
import { ConfirmDelete, inputValue, Toggle, useAction } from './admin-shared.js';
import type { ClusterData } from './cluster.js';

const CreatePool = graphql(`
  mutation ConsoleCreateNodePool($in: CreateNodePoolInput!) { createNodePool(input: $in) { id } }
`);
const DeletePool = graphql(`mutation ConsoleDeleteNodePool($id: ID!) { deleteNodePool(id: $id) }`);

type Pool = ClusterData['nodePools'][number];
type Node = Pool['nodes'][number];

/** Units of capacity a node of this flavor has per physical GPU. */
export function unitsPerGpu(data: ClusterData, flavor: string): number {
  const f = data.flavors.find((x) => x.name === flavor);
  return f && f.kind !== 'GPU' ? (f.slicesPerGpu ?? 1) : 1;
}

interface Fragmentation {
  flavor: string;
  capacity: number;
  free: number;
  wholeNodes: number;
  onWholeNodes: number;
  stranded: number;
  cordoned: number;
  largest: number;
}

export function fragmentation(nodes: readonly Node[], perGpu: (flavor: string) => number): Fragmentation[] {
  const byFlavor = new Map<string, Fragmentation>();
  for (const n of nodes) {
    const f = byFlavor.get(n.flavor) ?? {
      flavor: n.flavor,
      capacity: 0,
      free: 0,
      wholeNodes: 0,
      onWholeNodes: 0,
      stranded: 0,
      cordoned: 0,
      largest: 0,
    };
    const size = n.gpus * perGpu(n.flavor);
    f.capacity += size;
    if (n.unschedulable) f.cordoned += n.freeGpus;
    else {
      f.free += n.freeGpus;
      f.largest = Math.max(f.largest, n.freeGpus);
      if (size > 0 && n.freeGpus >= size) {
        f.wholeNodes++;
        f.onWholeNodes += n.freeGpus;
      } else f.stranded += n.freeGpus;
    }
    byFlavor.set(n.flavor, f);
  }
  return [...byFlavor.values()];
}

export function NodePools(p: { data: ClusterData; canEdit: boolean; onChanged: () => void }) {
  const [editing, setEditing] = useState<string | null>(null);
  const remove = useAction(DeletePool);
  const perGpu = (flavor: string) => unitsPerGpu(p.data, flavor);
  return (
    <section aria-labelledby="nodes-heading">
      <h2 id="nodes-heading">Nodes</h2>
      <Problem error={remove.problem} />
      {p.data.nodePools.map((pool) => {
        const frag = fragmentation(pool.nodes, perGpu);
        return (
          <article key={pool.id} class="pool" aria-label={`Pool ${pool.name}`}>
            <h3>
              {pool.name}
              {pool.dedicated ? ' (dedicated)' : ''}{' '}
              <small>
                {pool.nodes.length} node{pool.nodes.length === 1 ? '' : 's'}
                {frag.map((f) => ` · ${f.flavor} ${gpus(f.free)} of ${gpus(f.capacity)} free`).join('')}
              </small>
            </h3>
            {p.canEdit && (
              <p class="actions">
                <Toggle
                  what={`pool ${pool.name}`}
                  open={editing === pool.id}
                  onToggle={() => setEditing(editing === pool.id ? null : pool.id)}
                />{' '}
                <ConfirmDelete
                  what={`pool ${pool.name}`}
                  onConfirm={async () => {
                    if (await remove.run({ id: pool.id })) p.onChanged();
                  }}
                />
              </p>
            )}
            {editing === pool.id && (
              <PoolEditor
                pool={pool}
                data={p.data}
                onDone={() => {
                  setEditing(null);
                  p.onChanged();
                }}
              />
            )}
            <table aria-label={`Nodes of pool ${pool.name}`}>
              <thead>
                <tr>
                  <th scope="col">Node</th>
                  <th scope="col">Flavor</th>
                  <th scope="col">GPUs</th>
                  <th scope="col">Free units</th>
                </tr>
              </thead>
              <tbody>
                {pool.nodes.map((n) => (
                  <tr key={n.id}>
                    <td>
                      {n.name}
                      {n.unschedulable ? ' (cordoned)' : ''}
                    </td>
                    <td>{n.flavor}</td>
                    <td>{n.gpus}</td>
                    <td>
                      {gpus(n.freeGpus)} of {n.gpus * perGpu(n.flavor)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {frag.length > 0 && (
              <table aria-label={`Fragmentation of pool ${pool.name}`}>
                <thead>
                  <tr>
                    <th scope="col">Flavor</th>
                    <th scope="col">Free</th>
                    <th scope="col">On whole free nodes</th>
                    <th scope="col">Stranded on partly used nodes</th>
                    <th scope="col">Largest free block</th>
                    <th scope="col">Fragmented</th>
                  </tr>
                </thead>
                <tbody>
                  {frag.map((f) => (
                    <tr key={f.flavor}>
                      <td>{f.flavor}</td>
                      <td>
                        {gpus(f.free)} of {gpus(f.capacity)}
                        {f.cordoned ? ` (+${gpus(f.cordoned)} cordoned)` : ''}
                      </td>
                      <td>
                        {gpus(f.onWholeNodes)} ({f.wholeNodes} node{f.wholeNodes === 1 ? '' : 's'})
                      </td>
                      <td>{gpus(f.stranded)}</td>
                      <td>{gpus(f.largest)}</td>
                      <td>{f.free > 0 ? `${Math.round((100 * f.stranded) / f.free)}%` : '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </article>
        );
      })}
      {p.canEdit && <NewPool data={p.data} onCreated={p.onChanged} />}
    </section>
  );
}

function NewPool({ data, onCreated }: { data: ClusterData; onCreated: () => void }) {
  const create = useAction(CreatePool);
  const [name, setName] = useState('');
  const [tenant, setTenant] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!(await create.run({ in: { name: name.trim(), dedicatedTenantId: tenant || null, nodes: [] } })))
      return;
    setName('');
    setTenant('');
    onCreated();
  };
  return (
    <form class="inline-form" aria-label="New node pool" onSubmit={submit}>
      <strong>New node pool</strong>
      <label>
        Name <input required value={name} onInput={(e) => setName(inputValue(e))} />
      </label>
      <label>
        Dedicated to{' '}
        <select value={tenant} onChange={(e) => setTenant(inputValue(e))}>
          <option value="">any tenant (shared)</option>
          <NamedOptions items={data.tenants.edges.map((e) => e.node)} />
        </select>
      </label>
      <button type="submit" disabled={create.busy}>
        Create pool
      </button>
      <span class="hint">Nodes are added by editing the pool.</span>
      <Problem error={create.problem} />
    </form>
  );
}
