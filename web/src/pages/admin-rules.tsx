// The rules that choose a queue's isolation policy from its tenant's tier, workload type and SLA class
// (empty: any; the most specific matching rule wins, then the earliest). Platform admins replace the
// list (each rule must name a policy of the library) or restore the defaults.
import { useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { Problem } from '../parts/problem.js';
import { ConfirmDelete, Head, Pick, RemoveCell, Toggle, useAction, useRows } from './admin-shared.js';
import type { PoliciesData } from './policies.js';

const SetRules = graphql(`
  mutation ConsoleSetPolicyRules($rules: [IsolationPolicyRuleInput!]!) {
    setIsolationPolicyRules(rules: $rules) { policy }
  }
`);

type Rule = PoliciesData['isolationPolicyRules'][number];
type Tier = NonNullable<Rule['tier']>;
type Workload = NonNullable<Rule['workloadType']>;
type Sla = NonNullable<Rule['slaClass']>;
const TIERS: Tier[] = ['STANDARD', 'PREMIUM', 'ENTERPRISE'];
const WORKLOADS: Workload[] = ['TRAINING', 'FINE_TUNING', 'BATCH_INFERENCE', 'ONLINE_INFERENCE'];
const SLAS: Sla[] = ['CRITICAL', 'STANDARD', 'BEST_EFFORT'];
const COLUMNS = ['#', 'Tenant tier', 'Workload type', 'SLA class', 'Policy'];
type Row = { tier: string; workloadType: string; slaClass: string; policy: string };

export function PolicyRules(p: { data: PoliciesData; canEdit: boolean; onChanged: () => void }) {
  const set = useAction(SetRules);
  const [editing, setEditing] = useState(false);
  const { rows, reset, add, change, remove } = useRows<Row>();
  const open = () => {
    reset(
      p.data.isolationPolicyRules.map((r) => ({
        tier: r.tier ?? '',
        workloadType: r.workloadType ?? '',
        slaClass: r.slaClass ?? '',
        policy: r.policy,
      })),
    );
    setEditing(!editing);
  };
  const save = async (rules: Row[]) => {
    const input = rules.map((r) => ({
      tier: (r.tier || null) as Tier | null,
      workloadType: (r.workloadType || null) as Workload | null,
      slaClass: (r.slaClass || null) as Sla | null,
      policy: r.policy,
    }));
    if (!(await set.run({ rules: input }))) return;
    setEditing(false);
    p.onChanged();
  };
  const policies = p.data.isolationPolicies.map((x) => x.name);
  const columns = [
    ['tier', 'Tier', TIERS],
    ['workloadType', 'Workload type', WORKLOADS],
    ['slaClass', 'SLA class', SLAS],
    ['policy', 'Policy', policies],
  ] as const;
  return (
    <section aria-labelledby="rules-heading">
      <h2 id="rules-heading">Rules</h2>
      <p class="hint">The most specific rule that matches a queue chooses its policy; then the earliest.</p>
      {!editing && (
        <table aria-label="Isolation policy rules">
          <Head columns={COLUMNS} />
          <tbody>
            {p.data.isolationPolicyRules.map((r, i) => (
              <tr key={i}>
                <td>{i + 1}</td>
                <td>{r.tier ?? 'any'}</td>
                <td>{r.workloadType ?? 'any'}</td>
                <td>{r.slaClass ?? 'any'}</td>
                <td>{r.policy}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {p.canEdit && (
        <p class="actions">
          <Toggle what="the rules" open={editing} onToggle={open} />{' '}
          <ConfirmDelete verb="Restore" what="the default rules" onConfirm={() => save([])} />
        </p>
      )}
      {editing && (
        <form
          class="inline-form"
          aria-label="Edit the rules"
          onSubmit={(e) => {
            e.preventDefault();
            void save(rows);
          }}
        >
          <table aria-label="Rules being edited">
            <Head columns={[...COLUMNS, 'Remove']} />
            <tbody>
              {rows.map((r, i) => (
                <tr key={r.key}>
                  <td>{i + 1}</td>
                  {columns.map(([field, title, options]) => (
                    <td key={field}>
                      <Pick
                        label={`${title} of rule ${i + 1}`}
                        value={r[field]}
                        options={options}
                        any={field !== 'policy'}
                        onChange={(v) => change(r.key, field, v)}
                      />
                    </td>
                  ))}
                  <RemoveCell what={`rule ${i + 1}`} onRemove={() => remove(r.key)} />
                </tr>
              ))}
            </tbody>
          </table>
          <button
            type="button"
            onClick={() => add({ tier: '', workloadType: '', slaClass: '', policy: policies[0] ?? '' })}
          >
            Add rule
          </button>{' '}
          <button type="submit" disabled={set.busy}>
            Save rules
          </button>
        </form>
      )}
      <Problem error={set.problem} />
    </section>
  );
}
