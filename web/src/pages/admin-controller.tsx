// The governance controller (platform admins): whether it runs, its window, its last run and what
// that run changed; switched on or off and its window set. Off restores every queue's static setting.
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { CopyAs, curlOf } from '../parts/copy.js';
import { when } from '../parts/format.js';
import { Problem } from '../parts/problem.js';
import { duration, inputValue, useAction } from './admin-shared.js';

export const ControllerQuery = graphql(`
  query ConsoleGovernanceController {
    governanceController {
      enabled
      windowSeconds
      lastRunAt
      lastAdjustments {
        at
        policy
        reasons
        queue { name }
        from { lend borrow }
        to { lend borrow }
      }
    }
  }
`);
const SetController = graphql(`
  mutation ConsoleSetGovernanceController($enabled: Boolean!, $windowSeconds: Int) {
    setGovernanceController(enabled: $enabled, windowSeconds: $windowSeconds) { enabled windowSeconds }
  }
`);

const coefficient = (c: { lend: number; borrow?: number | null }) =>
  `lend ${c.lend}, borrow ${c.borrow == null ? 'unlimited' : `${c.borrow}×`}`;

export function GovernanceControllerView({ canEdit }: { canEdit: boolean }) {
  const [{ data, error }, refetch] = useQuery({ query: ControllerQuery });
  const c = data?.governanceController;
  return (
    <section aria-labelledby="controller-heading">
      <h2 id="controller-heading">Governance controller</h2>
      <Problem error={error && !data ? error : null} />
      {c && (
        <>
          <dl class="facts">
            <dt>State</dt>
            <dd>{c.enabled ? 'on' : 'off (every queue has its static setting)'}</dd>
            <dt>Window</dt>
            <dd>{duration(c.windowSeconds)}</dd>
            <dt>Last run</dt>
            <dd>{c.lastRunAt ? when(c.lastRunAt) : 'not yet'}</dd>
          </dl>
          {canEdit && (
            <ControllerForm
              enabled={c.enabled}
              windowSeconds={c.windowSeconds}
              onDone={() => refetch({ requestPolicy: 'network-only' })}
            />
          )}
          <h3>What the last window changed</h3>
          {c.lastAdjustments.length ? (
            <table aria-label="Last adjustments">
              <thead>
                <tr>
                  <th scope="col">Queue</th>
                  <th scope="col">Policy</th>
                  <th scope="col">From</th>
                  <th scope="col">To</th>
                  <th scope="col">Why</th>
                  <th scope="col">At</th>
                </tr>
              </thead>
              <tbody>
                {c.lastAdjustments.map((a, i) => (
                  <tr key={i}>
                    <td>{a.queue?.name ?? '(deleted)'}</td>
                    <td>{a.policy ?? '—'}</td>
                    <td>{coefficient(a.from)}</td>
                    <td>{coefficient(a.to)}</td>
                    <td>{a.reasons.join(', ').toLowerCase().replaceAll('_', ' ')}</td>
                    <td>{when(a.at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p>Nothing.</p>
          )}
          <CopyAs document={ControllerQuery} cli={curlOf(ControllerQuery)} />
        </>
      )}
    </section>
  );
}

function ControllerForm(p: { enabled: boolean; windowSeconds: number; onDone: () => void }) {
  const set = useAction(SetController);
  const [enabled, setEnabled] = useState(p.enabled);
  const [windowSeconds, setWindow] = useState(String(p.windowSeconds));
  return (
    <form
      class="inline-form"
      aria-label="Governance controller settings"
      onSubmit={async (e) => {
        e.preventDefault();
        if (await set.run({ enabled, windowSeconds: Number(windowSeconds) })) p.onDone();
      }}
    >
      <label>
        <input
          type="checkbox"
          checked={enabled}
          onChange={(e) => setEnabled((e.target as HTMLInputElement).checked)}
        />{' '}
        Controller on
      </label>
      <label>
        Window (s){' '}
        <input
          type="number"
          min={10}
          max={86400}
          step={1}
          required
          class="narrow"
          value={windowSeconds}
          onInput={(e) => setWindow(inputValue(e))}
        />
      </label>
      <button type="submit" disabled={set.busy}>
        Save controller
      </button>
      {set.done && <span role="status">Saved.</span>}
      <Problem error={set.problem} />
    </form>
  );
}
