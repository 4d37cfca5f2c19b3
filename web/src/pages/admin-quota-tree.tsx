// Cluster page, the quota tree: cohorts (nested) → their queues, each flavor's nominal, used, borrowed
// and lent GPUs as bars (live: the page refetches on queueUpdated), the cohort's sum beside them;
// cohorts created, their parent and own quota changed, and deleted after a question.
import { useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { NamedOptions } from '../parts/options.js';
import { Problem } from '../parts/problem.js';
import { QuotaBar } from '../parts/quota-bar.js';
import { CohortEditor } from './admin-cohort-editor.js';
import { ConfirmDelete, inputValue, Toggle, useAction } from './admin-shared.js';
import type { ClusterData } from './cluster.js';

const CreateCohort = graphql(`
  mutation ConsoleCreateCohort($in: CreateCohortInput!) { createCohort(input: $in) { id } }
`);
const DeleteCohort = graphql(`mutation ConsoleDeleteCohort($id: ID!) { deleteCohort(id: $id) }`);

type Cohort = ClusterData['cohorts'][number];
type Queue = ClusterData['queues'][number];
type Usage = NonNullable<Queue['usage']>[number];

interface TreeProps {
  data: ClusterData;
  canEdit: boolean;
  onChanged: () => void;
}

/** Each flavor's GPU figures summed over the queues. */
function sumByFlavor(queues: readonly Queue[]): Usage[] {
  const sums = new Map<string, Usage>();
  for (const u of queues.flatMap((q) => q.usage ?? []).filter((u) => u.resource === 'GPU')) {
    const s = sums.get(u.flavor) ?? { ...u, nominal: 0, used: 0, borrowed: 0, lent: 0 };
    s.nominal += u.nominal;
    s.used += u.used;
    s.borrowed += u.borrowed;
    s.lent += u.lent;
    sums.set(u.flavor, s);
  }
  return [...sums.values()];
}

export function QuotaTree(p: TreeProps) {
  const remove = useAction(DeleteCohort);
  const roots = p.data.cohorts.filter(
    (c) => !c.parentName || !p.data.cohorts.some((x) => x.name === c.parentName),
  );
  const loose = p.data.queues.filter((q) => !q.cohortName);
  return (
    <section aria-labelledby="tree-heading">
      <h2 id="tree-heading">Quota tree</h2>
      <Problem error={remove.problem} />
      {roots.map((c) => (
        <CohortNode key={c.id} cohort={c} depth={0} remove={(id) => remove.run({ id })} {...p} />
      ))}
      {loose.length > 0 && (
        <article class="cohort" aria-label="Queues in no cohort">
          <h3>No cohort</h3>
          {loose.map((q) => (
            <QueueBars key={q.id} queue={q} />
          ))}
        </article>
      )}
      {p.canEdit && <NewCohort data={p.data} onCreated={p.onChanged} />}
    </section>
  );
}

function CohortNode(
  p: TreeProps & { cohort: Cohort; depth: number; remove: (id: string) => Promise<unknown> },
) {
  const [editing, setEditing] = useState(false);
  const c = p.cohort;
  const queues = p.data.queues.filter((q) => q.cohortName === c.name);
  const children = p.data.cohorts.filter((x) => x.parentName === c.name);
  const Heading = (['h3', 'h4', 'h5', 'h6'] as const)[Math.min(p.depth, 3)]!;
  const held = c.quotas.filter((q) => q.nominal > 0);
  return (
    <article class="cohort" aria-label={`Cohort ${c.name}`}>
      <Heading>
        {c.name}{' '}
        <small>
          {queues.length} queue{queues.length === 1 ? '' : 's'}
          {held.length
            ? ` · holds ${held.map((q) => `${q.nominal} ${q.resource === 'GPU' ? '' : `${q.resource} `}${q.flavor}`).join(', ')}`
            : ''}
        </small>
      </Heading>
      {p.canEdit && (
        <p class="actions">
          <Toggle what={`cohort ${c.name}`} open={editing} onToggle={() => setEditing(!editing)} />{' '}
          <ConfirmDelete
            what={`cohort ${c.name}`}
            onConfirm={async () => {
              if (await p.remove(c.id)) p.onChanged();
            }}
          />
        </p>
      )}
      {editing && (
        <CohortEditor
          cohort={c}
          data={p.data}
          onDone={() => {
            setEditing(false);
            p.onChanged();
          }}
        />
      )}
      {queues.length > 0 && (
        <div class="cohort-sum">
          <p class="queue-name">All its queues</p>
          {sumByFlavor(queues).map((u) => (
            <QuotaBar key={u.flavor} {...u} />
          ))}
        </div>
      )}
      {queues.map((q) => (
        <QueueBars key={q.id} queue={q} />
      ))}
      {children.map((x) => (
        <CohortNode key={x.id} {...p} cohort={x} depth={p.depth + 1} />
      ))}
    </article>
  );
}

function QueueBars({ queue }: { queue: Queue }) {
  const lines = (queue.usage ?? []).filter((u) => u.resource === 'GPU');
  return (
    <article class="queue-bars" aria-label={`Queue ${queue.name}`}>
      <p class="queue-name">
        <strong>{queue.name}</strong> <small>{queue.tenant.name}</small>
      </p>
      {lines.length ? lines.map((u) => <QuotaBar key={u.flavor} {...u} />) : <p>No GPU quota.</p>}
    </article>
  );
}

function NewCohort({ data, onCreated }: { data: ClusterData; onCreated: () => void }) {
  const create = useAction(CreateCohort);
  const [name, setName] = useState('');
  const [parent, setParent] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!(await create.run({ in: { name: name.trim(), parentId: parent || null } }))) return;
    setName('');
    setParent('');
    onCreated();
  };
  return (
    <form class="inline-form" aria-label="New cohort" onSubmit={submit}>
      <strong>New cohort</strong>
      <label>
        Name <input required value={name} onInput={(e) => setName(inputValue(e))} />
      </label>
      <label>
        Parent{' '}
        <select value={parent} onChange={(e) => setParent(inputValue(e))}>
          <option value="">none (a root cohort)</option>
          <NamedOptions items={data.cohorts} />
        </select>
      </label>
      <button type="submit" disabled={create.busy}>
        Create cohort
      </button>
      <Problem error={create.problem} />
    </form>
  );
}
