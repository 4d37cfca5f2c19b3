// Cluster page, priority classes: value, preemptibility, grant and price multiplier (price book);
// created, changed and deleted after a question. The API refuses a class in use (CONFLICT naming what
// uses it) and a never-preempted class while its jobs borrow; its words are shown.
import { useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { Problem } from '../parts/problem.js';
import { ConfirmDelete, inputValue, Toggle, useAction } from './admin-shared.js';
import type { ClusterData } from './cluster.js';

const CreateClass = graphql(`
  mutation ConsoleCreatePriorityClass($in: CreatePriorityClassInput!) { createPriorityClass(input: $in) { name } }
`);
const UpdateClass = graphql(`
  mutation ConsoleUpdatePriorityClass($in: UpdatePriorityClassInput!) { updatePriorityClass(input: $in) { name } }
`);
const DeleteClass = graphql(
  `mutation ConsoleDeletePriorityClass($n: String!) { deletePriorityClass(name: $n) }`,
);

type PriorityClass = ClusterData['priorityClasses'][number];
type Preemptible = PriorityClass['preemptible'];
const PREEMPTIBLE: [Preemptible, string][] = [
  ['YES', 'yes'],
  ['RECLAIM_ONLY', 'only by reclaim'],
  ['NO', 'never'],
];
const words = (p: Preemptible) => PREEMPTIBLE.find(([v]) => v === p)?.[1] ?? p;

export function PriorityClasses(p: { data: ClusterData; canEdit: boolean; onChanged: () => void }) {
  const [editing, setEditing] = useState<string | null>(null);
  const remove = useAction(DeleteClass);
  const multiplier = (name: string) =>
    p.data.priceBook.multipliers.find((m) => m.priorityClass === name && m.current)?.multiplier ?? 1;
  return (
    <section aria-labelledby="classes-heading">
      <h2 id="classes-heading">Priority classes</h2>
      <table aria-label="Priority classes">
        <thead>
          <tr>
            <th scope="col">Class</th>
            <th scope="col">Value</th>
            <th scope="col">Preemptible</th>
            <th scope="col">Needs a grant</th>
            <th scope="col">Price multiplier</th>
            <th scope="col">Description</th>
            {p.canEdit && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {p.data.priorityClasses.map((c) => [
            <tr key={c.name}>
              <td>{c.name}</td>
              <td>{c.value}</td>
              <td>{words(c.preemptible)}</td>
              <td>{c.requiresGrant ? 'yes' : 'no'}</td>
              <td>×{multiplier(c.name)}</td>
              <td class="wrap">{c.description ?? '—'}</td>
              {p.canEdit && (
                <td class="actions">
                  <Toggle
                    what={`priority class ${c.name}`}
                    open={editing === c.name}
                    onToggle={() => setEditing(editing === c.name ? null : c.name)}
                  />{' '}
                  <ConfirmDelete
                    what={`priority class ${c.name}`}
                    onConfirm={async () => {
                      if (await remove.run({ n: c.name })) p.onChanged();
                    }}
                  />
                </td>
              )}
            </tr>,
            editing === c.name && (
              <tr key={`${c.name}-edit`} class="editing">
                <td colSpan={7}>
                  <ClassForm
                    current={c}
                    onDone={() => {
                      setEditing(null);
                      p.onChanged();
                    }}
                  />
                </td>
              </tr>
            ),
          ])}
        </tbody>
      </table>
      <Problem error={remove.problem} />
      {p.canEdit && <ClassForm onDone={p.onChanged} />}
    </section>
  );
}

/** Creates a class (no `current`) or changes one: the name never changes. */
function ClassForm({ current, onDone }: { current?: PriorityClass; onDone: () => void }) {
  const create = useAction(CreateClass);
  const update = useAction(UpdateClass);
  const [name, setName] = useState('');
  const [value, setValue] = useState(current ? String(current.value) : '');
  const [preemptible, setPreemptible] = useState<Preemptible>(current?.preemptible ?? 'YES');
  const [requiresGrant, setRequiresGrant] = useState(current?.requiresGrant ?? false);
  const [description, setDescription] = useState(current?.description ?? '');
  const submit = async (e: Event) => {
    e.preventDefault();
    const fields = {
      value: Number(value),
      preemptible,
      requiresGrant,
      description: description.trim() || null,
    };
    const ok = current
      ? await update.run({ in: { name: current.name, ...fields } })
      : await create.run({ in: { name: name.trim(), ...fields } });
    if (!ok) return;
    if (!current) {
      setName('');
      setValue('');
      setDescription('');
    }
    onDone();
  };
  return (
    <form
      class="inline-form"
      aria-label={current ? `Edit priority class ${current.name}` : 'New priority class'}
      onSubmit={submit}
    >
      {!current && <strong>New priority class</strong>}
      {!current && (
        <label>
          Name <input required value={name} onInput={(e) => setName(inputValue(e))} />
        </label>
      )}
      <label>
        Value <input type="number" step={1} required value={value} onInput={(e) => setValue(inputValue(e))} />
      </label>
      <label>
        Preemptible{' '}
        <select value={preemptible} onChange={(e) => setPreemptible(inputValue(e) as Preemptible)}>
          {PREEMPTIBLE.map(([v, text]) => (
            <option key={v} value={v}>
              {text}
            </option>
          ))}
        </select>
      </label>
      <label>
        <input
          type="checkbox"
          checked={requiresGrant}
          onChange={(e) => setRequiresGrant((e.target as HTMLInputElement).checked)}
        />{' '}
        Needs a grant
      </label>
      <label>
        Description <input value={description} onInput={(e) => setDescription(inputValue(e))} />
      </label>
      <button type="submit" disabled={create.busy || update.busy}>
        {current ? 'Save priority class' : 'Create priority class'}
      </button>
      <Problem error={current ? update.problem : create.problem} />
    </form>
  );
}
