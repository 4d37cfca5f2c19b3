// Policies: the isolation-policy library (anyone signed in reads it; platform admins add, change, reset
// and remove policies), the rules that choose a policy by tier × workload × SLA class, and the governance
// controller's state (platform admins). The API decides: anyone else reads what it allows and gets its
// refusal for the rest, without edit controls.
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import { graphql, type ResultOf } from '../graphql.js';
import { CopyAs, curlOf } from '../parts/copy.js';
import { Problem } from '../parts/problem.js';
import { GovernanceControllerView } from './admin-controller.js';
import { PolicyForm } from './admin-policy-form.js';
import { PolicyRules } from './admin-rules.js';
import { ConfirmDelete, duration, Toggle, useAction, useIsPlatformAdmin } from './admin-shared.js';
import './admin.css';

export const PoliciesQuery = graphql(`
  query ConsolePolicies {
    isolationPolicies {
      name
      description
      level
      lend { min base max }
      borrow { min base max }
      minRunBeforeReclaimSeconds
      reclaimGraceSeconds
      preemptible
      idle { utilizationBelow idleForSeconds notRunningForSeconds action }
      builtIn
      overridden
    }
    isolationPolicyRules { tier workloadType slaClass policy }
  }
`);
export type PoliciesData = ResultOf<typeof PoliciesQuery>;
export type Policy = PoliciesData['isolationPolicies'][number];

const DeletePolicy = graphql(`
  mutation ConsoleDeleteIsolationPolicy($name: String!) { deleteIsolationPolicy(name: $name) { name reset } }
`);

const range = (r: { min: number; base: number; max: number } | null | undefined, unit = '') =>
  r ? `${r.base}${unit} (${r.min}–${r.max})` : 'unlimited';

export function PoliciesPage() {
  const canEdit = useIsPlatformAdmin();
  const [{ data, error }, refetch] = useQuery({ query: PoliciesQuery });
  const reload = () => refetch({ requestPolicy: 'network-only' });
  const [editing, setEditing] = useState<string | null>(null);
  const remove = useAction(DeletePolicy);
  return (
    <section class="admin">
      <h1>Policies</h1>
      <Problem error={error && !data ? error : null} />
      {data && (
        <section aria-labelledby="policies-heading">
          <h2 id="policies-heading">Isolation policies</h2>
          <table class="wrap-cells" aria-label="Isolation policies">
            <thead>
              <tr>
                <th scope="col">Policy</th>
                <th scope="col">Lends (of unused nominal)</th>
                <th scope="col">Borrows (× nominal)</th>
                <th scope="col">Reclaim</th>
                <th scope="col">Preemptible</th>
                <th scope="col">Idle jobs</th>
                {canEdit && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {data.isolationPolicies.map((p) => [
                <tr key={p.name}>
                  <td class="wrap">
                    <strong>{p.name}</strong> {p.level}
                    {p.builtIn ? (p.overridden ? ' (built-in, changed)' : ' (built-in)') : ''}
                    <br />
                    <small>{p.description}</small>
                  </td>
                  <td>{range(p.lend)}</td>
                  <td>{range(p.borrow)}</td>
                  <td>
                    {p.minRunBeforeReclaimSeconds
                      ? `after ${duration(p.minRunBeforeReclaimSeconds)} of run`
                      : 'at once'}
                    , {duration(p.reclaimGraceSeconds)} to stop
                  </td>
                  <td>{p.preemptible}</td>
                  <td>
                    below {Math.round(p.idle.utilizationBelow * 100)}% for {duration(p.idle.idleForSeconds)},
                    not running after {duration(p.idle.notRunningForSeconds)}: {p.idle.action}
                  </td>
                  {canEdit && (
                    <td class="actions">
                      <Toggle
                        what={`policy ${p.name}`}
                        open={editing === p.name}
                        onToggle={() => setEditing(editing === p.name ? null : p.name)}
                      />{' '}
                      {(!p.builtIn || p.overridden) && (
                        <ConfirmDelete
                          what={`policy ${p.name}`}
                          verb={p.builtIn ? 'Reset' : 'Delete'}
                          onConfirm={async () => {
                            if (await remove.run({ name: p.name })) reload();
                          }}
                        />
                      )}
                    </td>
                  )}
                </tr>,
                editing === p.name && (
                  <tr key={`${p.name}-edit`} class="editing">
                    <td colSpan={7}>
                      <PolicyForm
                        current={p}
                        onDone={() => {
                          setEditing(null);
                          reload();
                        }}
                      />
                    </td>
                  </tr>
                ),
              ])}
            </tbody>
          </table>
          <Problem error={remove.problem} />
          {canEdit && <PolicyForm onDone={reload} />}
        </section>
      )}
      {data && <PolicyRules data={data} canEdit={canEdit} onChanged={reload} />}
      {data && <CopyAs document={PoliciesQuery} cli={curlOf(PoliciesQuery)} />}
      <GovernanceControllerView canEdit={canEdit} />
    </section>
  );
}
