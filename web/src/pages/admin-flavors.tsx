// Cluster page, flavors: each with its price from the price book (in effect now, and the versions
// scheduled), created, changed (a new price is a new price-book version) and deleted after a question.
// The API refuses what is in use (CONFLICT naming the users); its words are shown.
import { useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { money, when } from '../parts/format.js';
import { Problem } from '../parts/problem.js';
import { Choice, ConfirmDelete, inputValue, numberOrNull, Toggle, useAction } from './admin-shared.js';
import type { ClusterData } from './cluster.js';

const CreateFlavor = graphql(`
  mutation ConsoleCreateFlavor($in: CreateFlavorInput!) { createFlavor(input: $in) { id } }
`);
const UpdateFlavor = graphql(`
  mutation ConsoleUpdateFlavor($in: UpdateFlavorInput!) { updateFlavor(input: $in) { id pricePerUnitHour } }
`);
const DeleteFlavor = graphql(`mutation ConsoleDeleteFlavor($id: ID!) { deleteFlavor(id: $id) }`);

type Flavor = ClusterData['flavors'][number];
type Kind = Flavor['kind'];
const KINDS: Kind[] = ['GPU', 'MIG', 'TIMESLICE'];
/** What the new-flavor and edit forms both ask, as typed. */
interface Fields {
  kind: Kind;
  gpuModel: string;
  slices: string;
  price: string;
}
const slicesOf = (f: Fields) => (f.kind === 'GPU' ? null : numberOrNull(f.slices));

export function Flavors({
  data,
  canEdit,
  onChanged,
}: {
  data: ClusterData;
  canEdit: boolean;
  onChanged: () => void;
}) {
  const [editing, setEditing] = useState<string | null>(null);
  const remove = useAction(DeleteFlavor);
  const currency = data.priceBook.currency;
  const scheduled = (name: string) =>
    data.priceBook.flavorPrices.filter((p) => p.flavor === name && !p.current);
  return (
    <section aria-labelledby="flavors-heading">
      <h2 id="flavors-heading">Flavors</h2>
      <table aria-label="Flavors">
        <thead>
          <tr>
            <th scope="col">Flavor</th>
            <th scope="col">Kind</th>
            <th scope="col">GPU model</th>
            <th scope="col">Price per unit-hour</th>
            <th scope="col">Scheduled prices</th>
            {canEdit && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {data.flavors.map((f) => [
            <tr key={f.id}>
              <td>{f.name}</td>
              <td>
                {f.kind}
                {f.slicesPerGpu ? ` (${f.slicesPerGpu} per GPU)` : ''}
              </td>
              <td>{f.gpuModel ?? '—'}</td>
              <td title={f.priceEffectiveFrom ? `since ${when(f.priceEffectiveFrom)}` : undefined}>
                {money(f.pricePerUnitHour, currency)}
              </td>
              <td>
                {scheduled(f.name)
                  .map((p) => `${money(p.pricePerUnitHour, currency)} from ${when(p.effectiveFrom)}`)
                  .join('; ') || '—'}
              </td>
              {canEdit && (
                <td class="actions">
                  <Toggle
                    what={`flavor ${f.name}`}
                    open={editing === f.id}
                    onToggle={() => setEditing(editing === f.id ? null : f.id)}
                  />{' '}
                  <ConfirmDelete
                    what={`flavor ${f.name}`}
                    onConfirm={async () => {
                      if (await remove.run({ id: f.id })) onChanged();
                    }}
                  />
                </td>
              )}
            </tr>,
            editing === f.id && (
              <tr key={`${f.id}-edit`} class="editing">
                <td colSpan={6}>
                  <EditFlavor
                    flavor={f}
                    onDone={() => {
                      setEditing(null);
                      onChanged();
                    }}
                  />
                </td>
              </tr>
            ),
          ])}
        </tbody>
      </table>
      <Problem error={remove.problem} />
      {canEdit && <NewFlavor onCreated={onChanged} />}
    </section>
  );
}

function FlavorFields({ value: f, onChange }: { value: Fields; onChange: (f: Fields) => void }) {
  const set = (field: keyof Fields) => (e: Event) => onChange({ ...f, [field]: inputValue(e) });
  return (
    <>
      <Choice label="Kind" value={f.kind} options={KINDS} onChange={(kind) => onChange({ ...f, kind })} />
      <label>
        GPU model <input value={f.gpuModel} onInput={set('gpuModel')} />
      </label>
      {f.kind !== 'GPU' && (
        <label>
          Slices per GPU <input type="number" min={1} required value={f.slices} onInput={set('slices')} />
        </label>
      )}
      <label>
        Price per unit-hour{' '}
        <input type="number" min={0} step="any" required value={f.price} onInput={set('price')} />
      </label>
    </>
  );
}

function NewFlavor({ onCreated }: { onCreated: () => void }) {
  const create = useAction(CreateFlavor);
  const [name, setName] = useState('');
  const [fields, setFields] = useState<Fields>({ kind: 'GPU', gpuModel: '', slices: '', price: '' });
  const submit = async (e: Event) => {
    e.preventDefault();
    const created = await create.run({
      in: {
        name: name.trim(),
        kind: fields.kind,
        gpuModel: fields.gpuModel.trim() || null,
        slicesPerGpu: slicesOf(fields),
        pricePerUnitHour: Number(fields.price),
      },
    });
    if (!created) return;
    setName('');
    setFields({ ...fields, gpuModel: '', slices: '', price: '' });
    onCreated();
  };
  return (
    <form class="inline-form" aria-label="New flavor" onSubmit={submit}>
      <strong>New flavor</strong>
      <label>
        Name <input required value={name} onInput={(e) => setName(inputValue(e))} />
      </label>
      <FlavorFields value={fields} onChange={setFields} />
      <button type="submit" disabled={create.busy}>
        Create flavor
      </button>
      <Problem error={create.problem} />
    </form>
  );
}

function EditFlavor({ flavor, onDone }: { flavor: Flavor; onDone: () => void }) {
  const update = useAction(UpdateFlavor);
  const [fields, setFields] = useState<Fields>({
    kind: flavor.kind,
    gpuModel: flavor.gpuModel ?? '',
    slices: flavor.slicesPerGpu == null ? '' : String(flavor.slicesPerGpu),
    price: String(flavor.pricePerUnitHour),
  });
  const [from, setFrom] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    const { kind } = fields;
    const newPrice = Number(fields.price);
    const newSlices = slicesOf(fields);
    // Only what changed is sent: a kind or slice count is refused while the flavor is in use.
    const input = {
      id: flavor.id,
      gpuModel: fields.gpuModel.trim() || null,
      ...(kind !== flavor.kind ? { kind } : {}),
      ...(newSlices !== (flavor.slicesPerGpu ?? null) ? { slicesPerGpu: newSlices } : {}),
      ...(newPrice !== flavor.pricePerUnitHour || from
        ? {
            pricePerUnitHour: newPrice,
            ...(from ? { priceEffectiveFrom: new Date(from).toISOString() } : {}),
          }
        : {}),
    };
    if (await update.run({ in: input })) onDone();
  };
  return (
    <form class="inline-form" aria-label={`Edit flavor ${flavor.name}`} onSubmit={submit}>
      <FlavorFields value={fields} onChange={setFields} />
      <label>
        Price from (empty: now){' '}
        <input type="datetime-local" value={from} onInput={(e) => setFrom(inputValue(e))} />
      </label>
      <button type="submit" disabled={update.busy}>
        Save flavor
      </button>
      <Problem error={update.problem} />
    </form>
  );
}
