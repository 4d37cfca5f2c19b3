// The options of the selects that choose a thing by its id and show its name.
/** Queues, tenants, cohorts: any list of `{ id, name }`. */
export function NamedOptions({ items }: { items: readonly { id: string; name: string }[] }) {
  return (
    <>
      {items.map((x) => (
        <option key={x.id} value={x.id}>
          {x.name}
        </option>
      ))}
    </>
  );
}
