// A cohort's inline editor: its parent (never one of its own descendants: the API refuses a cycle) and
// what the cohort itself holds, lendable to its children (the whole list, replaced on save).
import { useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { NamedOptions } from '../parts/options.js';
import { Problem } from '../parts/problem.js';
import {
  Head,
  inputValue,
  type Keyed,
  numberOrNull,
  Pick,
  RemoveCell,
  useAction,
  useRows,
} from './admin-shared.js';
import type { ClusterData } from './cluster.js';

const UpdateCohort = graphql(`
  mutation ConsoleUpdateCohort($in: UpdateCohortInput!) { updateCohort(input: $in) { id } }
`);

type Cohort = ClusterData['cohorts'][number];
type Resource = Cohort['quotas'][number]['resource'];
const RESOURCES: Resource[] = ['GPU', 'CPU', 'MEMORY'];
interface Line {
  flavor: string;
  resource: Resource;
  nominal: string;
  borrowingLimit: string;
  lendingLimit: string;
}
const text = (n: number | null | undefined) => (n == null ? '' : String(n));

export function CohortEditor({
  cohort,
  data,
  onDone,
}: {
  cohort: Cohort;
  data: ClusterData;
  onDone: () => void;
}) {
  const update = useAction(UpdateCohort);
  const parentId = data.cohorts.find((c) => c.name === cohort.parentName)?.id ?? '';
  const [parent, setParent] = useState(parentId);
  const { rows, add, change, remove } = useRows<Line>(() =>
    cohort.quotas.map((q) => ({
      flavor: q.flavor,
      resource: q.resource,
      nominal: text(q.nominal),
      borrowingLimit: text(q.borrowingLimit),
      lendingLimit: text(q.lendingLimit),
    })),
  );
  const submit = async (e: Event) => {
    e.preventDefault();
    const quotas = rows.map((l) => ({
      flavor: l.flavor,
      resource: l.resource,
      nominal: Number(l.nominal),
      borrowingLimit: numberOrNull(l.borrowingLimit),
      lendingLimit: numberOrNull(l.lendingLimit),
    }));
    if (await update.run({ in: { id: cohort.id, parentId: parent || null, quotas } })) onDone();
  };
  const name = (l: Keyed<Line>) => `line ${l.key + 1}`;
  return (
    <form class="inline-form" aria-label={`Edit cohort ${cohort.name}`} onSubmit={submit}>
      <label>
        Parent{' '}
        <select value={parent} onChange={(e) => setParent(inputValue(e))}>
          <option value="">none (a root cohort)</option>
          <NamedOptions items={data.cohorts.filter((c) => c.id !== cohort.id)} />
        </select>
      </label>
      {rows.length === 0 && <span class="hint">The cohort holds no quota of its own.</span>}
      {rows.length > 0 && (
        <table aria-label={`Quota cohort ${cohort.name} holds`}>
          <Head columns={['Flavor', 'Resource', 'Nominal', 'Borrowing limit', 'Lending limit', 'Remove']} />
          <tbody>
            {rows.map((l) => (
              <tr key={l.key}>
                <td>
                  <Pick
                    label={`Flavor of ${name(l)}`}
                    value={l.flavor}
                    options={data.flavors.map((f) => f.name)}
                    onChange={(v) => change(l.key, 'flavor', v)}
                  />
                </td>
                <td>
                  <Pick
                    label={`Resource of ${name(l)}`}
                    value={l.resource}
                    options={RESOURCES}
                    onChange={(v) => change(l.key, 'resource', v)}
                  />
                </td>
                {(
                  [
                    ['nominal', 'Nominal'],
                    ['borrowingLimit', 'Borrowing limit'],
                    ['lendingLimit', 'Lending limit'],
                  ] as const
                ).map(([field, title]) => (
                  <td key={field}>
                    <input
                      type="number"
                      min={0}
                      step="any"
                      required={field === 'nominal'}
                      class="narrow"
                      placeholder={field === 'nominal' ? undefined : 'none'}
                      aria-label={`${title} of ${name(l)}`}
                      value={l[field]}
                      onInput={(e) => change(l.key, field, inputValue(e))}
                    />
                  </td>
                ))}
                <RemoveCell what={name(l)} onRemove={() => remove(l.key)} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <button
        type="button"
        onClick={() =>
          add({
            flavor: data.flavors[0]?.name ?? '',
            resource: 'GPU',
            nominal: '0',
            borrowingLimit: '',
            lendingLimit: '',
          })
        }
      >
        Add quota line
      </button>{' '}
      <button type="submit" disabled={update.busy}>
        Save cohort
      </button>
      <Problem error={update.problem} />
    </form>
  );
}
