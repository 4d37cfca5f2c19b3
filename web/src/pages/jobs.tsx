// Jobs: the tenant's jobs as a table (filter by state, sort, search by name), virtualized so 10,000
// rows scroll smoothly, pages fetched as the table scrolls; live: a job submitted, admitted, preempted
// or finished in any of the tenant's queues refreshes the rows (queueUpdated), positions and ETAs too.

import { elementScroll, observeElementOffset, observeElementRect, Virtualizer } from '@tanstack/virtual-core';
import { useClient } from '@urql/preact';
import { memo } from 'preact/compat';
import { useEffect, useMemo, useReducer, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import type { Viewer } from '../app.js';
import { graphql, type ResultOf } from '../graphql.js';
import { CopyAs } from '../parts/copy.js';
import { fromNow, gpus, when } from '../parts/format.js';
import { useRefetchOn } from '../parts/live.js';

export const JobsQuery = graphql(`
  query ConsoleJobs($slug: String!, $after: String, $states: [JobState!]) {
    tenant(slug: $slug) {
      id
      queues { id name }
      jobs(first: 100, after: $after, filter: { states: $states }) {
        edges {
          node {
            id
            name
            state
            gpus
            priorityClass
            submittedAt
            eta
            queue { name }
            position { inQueue queueLength }
            pendingReason { message }
          }
        }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
`);
type JobRow = ResultOf<typeof JobsQuery>['tenant']['jobs']['edges'][number]['node'];
const QueueChanged = graphql(
  `subscription ConsoleJobsQueue($id: ID!) { queueUpdated(id: $id) { id pendingCount admittedCount } }`,
);

const STATES = ['PENDING', 'ADMITTED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
const ROW_HEIGHT = 36;
type SortKey = 'submittedAt' | 'name' | 'state' | 'gpus';

export function JobsPage({ viewer }: { viewer: Viewer }) {
  const slug = viewer.memberships[0]?.tenant.slug ?? '';
  const client = useClient();
  const [states, setStates] = useState<string[]>([]);
  const [search, setSearch] = useState('');
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: 'submittedAt', desc: true });
  const [rows, setRows] = useState<JobRow[]>([]);
  const [queues, setQueues] = useState<{ id: string; name: string }[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  const more = useRef<{ cursor: string | null; loading: boolean; done: boolean }>({
    cursor: null,
    loading: false,
    done: false,
  });

  const vars = (after: string | null) => ({
    slug,
    after,
    states: states.length ? (states as JobRow['state'][]) : null,
  });
  /** The first page again (a change happened): rows already loaded beyond it are kept until refetched. */
  const loadFirst = async () => {
    const r = await client.query(JobsQuery, vars(null), { requestPolicy: 'network-only' }).toPromise();
    if (r.error) return setProblem(r.error.message);
    const page = r.data!.tenant.jobs;
    setQueues(r.data!.tenant.queues);
    setRows((old) => {
      const fresh = page.edges.map((e) => e.node);
      const ids = new Set(fresh.map((j) => j.id));
      return [...fresh, ...old.filter((j) => !ids.has(j.id)).slice(Math.max(0, fresh.length - 100))];
    });
    if (more.current.cursor === null)
      more.current = {
        cursor: page.pageInfo.endCursor ?? null,
        loading: false,
        done: !page.pageInfo.hasNextPage,
      };
  };
  const loadMore = async () => {
    const m = more.current;
    if (m.loading || m.done || !m.cursor) return;
    m.loading = true;
    const r = await client.query(JobsQuery, vars(m.cursor), { requestPolicy: 'network-only' }).toPromise();
    m.loading = false;
    if (r.error) return setProblem(r.error.message);
    const page = r.data!.tenant.jobs;
    more.current = {
      cursor: page.pageInfo.endCursor ?? null,
      loading: false,
      done: !page.pageInfo.hasNextPage,
    };
    setRows((old) => {
      const ids = new Set(old.map((j) => j.id));
      return [...old, ...page.edges.map((e) => e.node).filter((j) => !ids.has(j.id))];
    });
  };
  useEffect(() => {
    more.current = { cursor: null, loading: false, done: false };
    setRows([]);
    void loadFirst();
  }, [slug, states.join()]);

  const shown = useMemo(() => {
    const needle = search.trim().toLowerCase();
    const list = needle ? rows.filter((j) => j.name.toLowerCase().includes(needle)) : rows;
    const dir = sort.desc ? -1 : 1;
    return [...list].sort((a, b) => {
      const x = a[sort.key];
      const y = b[sort.key];
      return (x < y ? -1 : x > y ? 1 : 0) * dir;
    });
  }, [rows, search, sort]);

  const header = (key: SortKey, label: string) => (
    <th scope="col" aria-sort={sort.key === key ? (sort.desc ? 'descending' : 'ascending') : 'none'}>
      <button type="button" onClick={() => setSort({ key, desc: sort.key === key ? !sort.desc : false })}>
        {label}
      </button>
    </th>
  );

  return (
    <section>
      <h1>Jobs</h1>
      {queues.map((q) => (
        <QueueWatch key={q.id} id={q.id} onChange={() => void loadFirst()} />
      ))}
      <div class="filters">
        <label>
          Search{' '}
          <input
            type="search"
            value={search}
            onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
          />
        </label>
        <fieldset>
          <legend>State</legend>
          {STATES.map((s) => (
            <label key={s}>
              <input
                type="checkbox"
                checked={states.includes(s)}
                onChange={() =>
                  setStates(states.includes(s) ? states.filter((x) => x !== s) : [...states, s])
                }
              />
              {s.toLowerCase()}
            </label>
          ))}
        </fieldset>
      </div>
      {problem && <p role="alert">{problem}</p>}
      <VirtualRows count={shown.length} onEnd={() => void loadMore()}>
        {(range) => (
          <table aria-label="Jobs" aria-rowcount={shown.length + 1}>
            <thead>
              <tr>
                {header('name', 'Name')}
                {header('state', 'State')}
                <th scope="col">Queue</th>
                {header('gpus', 'GPUs')}
                <th scope="col">Position</th>
                <th scope="col">ETA</th>
                {header('submittedAt', 'Submitted')}
              </tr>
            </thead>
            <tbody>
              {range.before > 0 && <tr class="spacer" style={{ height: `${range.before}px` }} />}
              {range.items.map((i) => (
                <JobTableRow key={shown[i]!.id} job={shown[i]!} index={i} />
              ))}
              {range.after > 0 && <tr class="spacer" style={{ height: `${range.after}px` }} />}
            </tbody>
          </table>
        )}
      </VirtualRows>
      <CopyAs
        document={JobsQuery}
        variables={vars(null)}
        cli={`npx fairway ls${states.length ? ` --state ${states.join(',').toLowerCase()}` : ''}`}
      />
    </section>
  );
}

/** One row; unchanged rows are not drawn again while the table scrolls (only the rows that come into view are). */
const JobTableRow = memo(function JobTableRow({ job: j, index }: { job: JobRow; index: number }) {
  return (
    <tr aria-rowindex={index + 2} style={{ height: `${ROW_HEIGHT}px` }}>
      <td>
        <Link href={`/jobs/${encodeURIComponent(j.id)}`}>{j.name}</Link>
      </td>
      <td>
        <span class={`state ${j.state.toLowerCase()}`}>{j.state}</span>
      </td>
      <td>{j.queue.name}</td>
      <td>{gpus(j.gpus)}</td>
      <td>{j.position?.inQueue != null ? `${j.position.inQueue} of ${j.position.queueLength}` : '—'}</td>
      <td title={when(j.eta)}>{j.state === 'PENDING' ? fromNow(j.eta) : '—'}</td>
      <td>{when(j.submittedAt)}</td>
    </tr>
  );
});

function QueueWatch({ id, onChange }: { id: string; onChange: () => void }) {
  useRefetchOn(QueueChanged, { id }, onChange);
  return null;
}

interface RowRange {
  items: number[];
  before: number;
  after: number;
}

/** A scroll box that renders only the rows in view (TanStack Virtual's core), and says when its end is near. */
function VirtualRows(props: {
  count: number;
  onEnd: () => void;
  children: (r: RowRange) => preact.JSX.Element;
}) {
  const box = useRef<HTMLDivElement>(null);
  const [, render] = useReducer((n: number) => n + 1, 0);
  const virtualizer = useMemo(
    () =>
      new Virtualizer<HTMLDivElement, HTMLTableRowElement>({
        count: props.count,
        getScrollElement: () => box.current,
        estimateSize: () => ROW_HEIGHT,
        overscan: 10,
        scrollToFn: elementScroll,
        observeElementRect,
        observeElementOffset,
        onChange: () => render(0),
      }),
    [],
  );
  virtualizer.setOptions({ ...virtualizer.options, count: props.count });
  useEffect(() => virtualizer._didMount(), []);
  useEffect(() => virtualizer._willUpdate());
  const items = virtualizer.getVirtualItems();
  const total = virtualizer.getTotalSize();
  const first = items[0];
  const last = items.at(-1);
  useEffect(() => {
    if (last && last.index >= props.count - 20) props.onEnd();
  }, [last?.index, props.count]);
  return (
    <div class="rows" ref={box} data-testid="jobs-scroll" data-rows={props.count}>
      {props.children({
        items: items.map((i) => i.index),
        before: first ? first.start : 0,
        after: last ? Math.max(0, total - last.end) : 0,
      })}
    </div>
  );
}
