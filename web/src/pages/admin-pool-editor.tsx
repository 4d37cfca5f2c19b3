// A node pool's inline editor: who it is dedicated to (the API does not say which tenant it is now, so
// "unchanged" is the default) and its whole node list (rows added, changed, removed, then saved at once:
// the API refuses to remove or change a node a job runs on, naming it).
import { useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { NamedOptions } from '../parts/options.js';
import { Problem } from '../parts/problem.js';
import { Head, inputValue, type Keyed, Pick, RemoveCell, useAction, useRows } from './admin-shared.js';
import type { ClusterData } from './cluster.js';

const UpdatePool = graphql(`
  mutation ConsoleUpdateNodePool($in: UpdateNodePoolInput!) { updateNodePool(input: $in) { id } }
`);

type Pool = ClusterData['nodePools'][number];
interface Row {
  existing: boolean;
  name: string;
  flavor: string;
  gpus: string;
  cpuMillis: string;
  memoryMiB: string;
}

const UNCHANGED = '(unchanged)';
const SHARED = '';

export function PoolEditor({ pool, data, onDone }: { pool: Pool; data: ClusterData; onDone: () => void }) {
  const update = useAction(UpdatePool);
  const [dedicated, setDedicated] = useState(UNCHANGED);
  const { rows, add, change, remove } = useRows<Row>(() =>
    pool.nodes.map((n) => ({
      existing: true,
      name: n.name,
      flavor: n.flavor,
      gpus: String(n.gpus),
      cpuMillis: String(n.cpuMillis),
      memoryMiB: String(n.memoryMiB),
    })),
  );
  const addNode = () => {
    const first = rows[0];
    add({
      existing: false,
      name: '',
      flavor: first?.flavor ?? data.flavors[0]?.name ?? '',
      gpus: first?.gpus ?? '8',
      cpuMillis: first?.cpuMillis ?? '64000',
      memoryMiB: first?.memoryMiB ?? '262144',
    });
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    const input = {
      id: pool.id,
      nodes: rows.map((r) => ({
        name: r.name.trim(),
        flavor: r.flavor,
        gpus: Number(r.gpus),
        cpuMillis: Number(r.cpuMillis),
        memoryMiB: Number(r.memoryMiB),
      })),
      ...(dedicated === UNCHANGED ? {} : { dedicatedTenantId: dedicated === SHARED ? null : dedicated }),
    };
    if (await update.run({ in: input })) onDone();
  };
  const label = (r: Keyed<Row>) => (r.existing ? r.name : `new node ${r.key - pool.nodes.length + 1}`);
  return (
    <form class="inline-form pool-editor" aria-label={`Edit pool ${pool.name}`} onSubmit={submit}>
      <label>
        Dedicated to{' '}
        <select value={dedicated} onChange={(e) => setDedicated(inputValue(e))}>
          <option value={UNCHANGED}>
            unchanged ({pool.dedicated ? 'dedicated to a tenant' : 'any tenant'})
          </option>
          <option value={SHARED}>any tenant (shared)</option>
          <NamedOptions items={data.tenants.edges.map((e) => e.node)} />
        </select>
      </label>
      <table aria-label={`Node list of pool ${pool.name}`}>
        <Head columns={['Node', 'Flavor', 'GPUs', 'CPU (millicores)', 'Memory (MiB)', 'Remove']} />
        <tbody>
          {rows.map((r) => (
            <tr key={r.key}>
              <td>
                {r.existing ? (
                  r.name
                ) : (
                  <input
                    required
                    aria-label={`Name of ${label(r)}`}
                    value={r.name}
                    onInput={(e) => change(r.key, 'name', inputValue(e))}
                  />
                )}
              </td>
              <td>
                <Pick
                  label={`Flavor of ${label(r)}`}
                  value={r.flavor}
                  options={data.flavors.map((f) => f.name)}
                  onChange={(v) => change(r.key, 'flavor', v)}
                />
              </td>
              {(['gpus', 'cpuMillis', 'memoryMiB'] as const).map((field) => (
                <td key={field}>
                  <input
                    type="number"
                    min={0}
                    step={1}
                    required
                    class="narrow"
                    aria-label={`${field === 'gpus' ? 'GPUs' : field === 'cpuMillis' ? 'CPU' : 'Memory'} of ${label(r)}`}
                    value={r[field]}
                    onInput={(e) => change(r.key, field, inputValue(e))}
                  />
                </td>
              ))}
              <RemoveCell what={label(r)} onRemove={() => remove(r.key)} />
            </tr>
          ))}
        </tbody>
      </table>
      <button type="button" onClick={addNode}>
        Add node
      </button>{' '}
      <button type="submit" disabled={update.busy}>
        Save pool
      </button>
      <Problem error={update.problem} />
    </form>
  );
}
