// What the platform-admin pages (cluster, policies, break-glass) share: whether the viewer is a platform
// admin (to hide what others cannot do; the API decides), a mutation runner that keeps the refusal to
// show, a delete that asks first, and the pieces of the inline forms (selects, the rows of a list saved
// whole).
import type { AnyVariables, TypedDocumentNode } from '@urql/core';
import { useMutation, useQuery } from '@urql/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { problemOf } from '../parts/problem.js';

const AdminViewer = graphql(`query ConsoleAdminViewer { viewer { isPlatformAdmin } }`);

/** True once the API says the viewer is a platform admin (false while it has not said). */
export function useIsPlatformAdmin(): boolean {
  const [{ data }] = useQuery({ query: AdminViewer });
  return data?.viewer.isPlatformAdmin === true;
}

/**
 * One mutation of a form: `run` resolves to its data, or null after a refusal, which `problem`
 * then holds (shown with role="alert" by <Problem>); `done` says the last call succeeded.
 */
export function useAction<D, V extends AnyVariables>(document: TypedDocumentNode<D, V>) {
  const [state, execute] = useMutation(document);
  const [problem, setProblem] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const run = async (variables: V): Promise<D | null> => {
    setProblem(null);
    setDone(false);
    const result = await execute(variables);
    if (result.error || !result.data) {
      setProblem(problemOf(result.error) ?? 'The API answered nothing.');
      return null;
    }
    setDone(true);
    return result.data;
  };
  return { run, problem, done, busy: state.fetching, clear: () => setProblem(null) };
}

/** "Delete", then a question with "Yes, delete …" (focused) and "Cancel": nothing goes without the second click. */
export function ConfirmDelete(p: { what: string; onConfirm: () => Promise<unknown>; verb?: string }) {
  const verb = p.verb ?? 'Delete';
  const [asking, setAsking] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) yes.current?.focus();
  }, [asking]);
  if (!asking)
    return (
      <button type="button" aria-label={`${verb} ${p.what}`} onClick={() => setAsking(true)}>
        {verb}
      </button>
    );
  return (
    <span class="confirm">
      {verb} {p.what}?{' '}
      <button
        type="button"
        ref={yes}
        class="danger"
        onClick={async () => {
          setAsking(false);
          await p.onConfirm();
        }}
      >
        Yes, {verb.toLowerCase()} {p.what}
      </button>{' '}
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** A text button ("Edit") that opens and closes an inline form under what it edits. */
export function Toggle(p: { what: string; open: boolean; onToggle: () => void; label?: string }) {
  const label = p.label ?? 'Edit';
  return (
    <button type="button" aria-label={`${label} ${p.what}`} aria-expanded={p.open} onClick={p.onToggle}>
      {label}
    </button>
  );
}

const optionsOf = (values: readonly string[]) =>
  values.map((o) => (
    <option key={o} value={o}>
      {o}
    </option>
  ));

/** A select of plain values named by `label` (not shown); `any` puts "any" (the empty value) first. */
export function Pick<T extends string>(p: {
  label: string;
  value: T;
  options: readonly T[];
  any?: boolean;
  onChange: (v: T) => void;
}) {
  return (
    <select aria-label={p.label} value={p.value} onChange={(e) => p.onChange(inputValue(e) as T)}>
      {p.any && <option value="">any</option>}
      {optionsOf(p.options)}
    </select>
  );
}

/** A select of plain values with its label shown before it. */
export function Choice<T extends string>(p: {
  label: string;
  value: T;
  options: readonly T[];
  onChange: (v: T) => void;
}) {
  return (
    <label>
      {p.label}{' '}
      <select value={p.value} onChange={(e) => p.onChange(inputValue(e) as T)}>
        {optionsOf(p.options)}
      </select>
    </label>
  );
}

export type Keyed<T> = T & { key: number };

/**
 * The rows of a list that is edited, then saved whole. A row keeps its key while others come and go;
 * new rows are keyed after the initial ones, so a label can count them.
 */
export function useRows<T extends object>(initial: () => T[] = () => []) {
  const keyed = (list: T[]) => list.map((r, key): Keyed<T> => ({ ...r, key }));
  const [rows, setRows] = useState(() => keyed(initial()));
  const [next, setNext] = useState(rows.length);
  return {
    rows,
    reset: (list: T[]) => {
      setRows(keyed(list));
      setNext(list.length);
    },
    add: (row: T) => {
      setRows([...rows, { ...row, key: next }]);
      setNext(next + 1);
    },
    change: (key: number, field: keyof T, value: string) =>
      setRows(rows.map((r) => (r.key === key ? { ...r, [field]: value } : r))),
    remove: (key: number) => setRows(rows.filter((r) => r.key !== key)),
  };
}

export function Head({ columns }: { columns: readonly string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => (
          <th key={c} scope="col">
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** The last cell of an edited row: its "Remove" button, named after the row. */
export function RemoveCell({ what, onRemove }: { what: string; onRemove: () => void }) {
  return (
    <td>
      <button type="button" aria-label={`Remove ${what}`} onClick={onRemove}>
        Remove
      </button>
    </td>
  );
}

/** Seconds in words: 90 s, 10 min, 1.5 h. */
export function duration(s: number): string {
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Number((s / 3600).toFixed(1))} h`;
}

/** A number input's value: null when empty. */
export const numberOrNull = (text: string): number | null => (text.trim() === '' ? null : Number(text));
export const inputValue = (e: Event) => (e.target as HTMLInputElement | HTMLSelectElement).value;
