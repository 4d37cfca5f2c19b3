// Break-glass (platform admins): a tenant's grants, newest first; open one (why, for how long) to look
// inside the tenant and act there as its admin, and close it early. The API audits each action in the
// tenant's own log (its auditors see who looked and why); anyone else gets its refusal, no controls.
import { useQuery } from '@urql/preact';
import { useState } from 'preact/hooks';
import type { Viewer } from '../app.js';
import { graphql } from '../graphql.js';
import { CopyAs, curlOf } from '../parts/copy.js';
import { fromNow, when } from '../parts/format.js';
import { NamedOptions } from '../parts/options.js';
import { Problem } from '../parts/problem.js';
import { ConfirmDelete, inputValue, useAction } from './admin-shared.js';
import './admin.css';

const TenantsQuery = graphql(`
  query ConsoleBreakGlassTenants { tenants(first: 100) { edges { node { id name slug } } } }
`);
export const GrantsQuery = graphql(`
  query ConsoleBreakGlassGrants($tenantId: ID!) {
    breakGlassGrants(tenantId: $tenantId) { id operatorName reason createdAt expiresAt closedAt active }
  }
`);
const OpenGrant = graphql(`
  mutation ConsoleOpenBreakGlass($in: OpenBreakGlassInput!) { openBreakGlass(input: $in) { id expiresAt } }
`);
const CloseGrant = graphql(`
  mutation ConsoleCloseBreakGlass($id: ID!) { closeBreakGlass(id: $id) { id closedAt active } }
`);

export function BreakGlassPage({ viewer }: { viewer: Viewer }) {
  const [{ data: tenants, error: tenantsError }] = useQuery({ query: TenantsQuery });
  const [chosen, setChosen] = useState('');
  const list = tenants?.tenants.edges.map((e) => e.node) ?? [];
  const tenantId = chosen || list[0]?.id || '';
  const [{ data, error }, refetch] = useQuery({
    query: GrantsQuery,
    variables: { tenantId },
    pause: !tenantId,
  });
  const reload = () => refetch({ requestPolicy: 'network-only' });
  const close = useAction(CloseGrant);
  const tenant = list.find((t) => t.id === tenantId);
  return (
    <section class="admin">
      <h1>Break-glass</h1>
      <Problem error={tenantsError && !tenants ? tenantsError : null} />
      {list.length > 0 && (
        <label>
          Tenant{' '}
          <select value={tenantId} onChange={(e) => setChosen(inputValue(e))}>
            <NamedOptions items={list} />
          </select>
        </label>
      )}
      <Problem error={error && !data ? error : null} />
      {data && tenant && (
        <>
          <h2>Grants for {tenant.name}</h2>
          <p class="hint">
            Opening, every read under a grant and closing are audited in the tenant's own log.
          </p>
          <table aria-label={`Break-glass grants for ${tenant.name}`}>
            <thead>
              <tr>
                <th scope="col">Opened</th>
                <th scope="col">By</th>
                <th scope="col">Reason</th>
                <th scope="col">Expires</th>
                <th scope="col">State</th>
                {viewer.isPlatformAdmin && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {data.breakGlassGrants.map((g) => (
                <tr key={g.id}>
                  <td>{when(g.createdAt)}</td>
                  <td>{g.operatorName}</td>
                  <td class="wrap">{g.reason}</td>
                  <td title={when(g.expiresAt)}>{fromNow(g.expiresAt)}</td>
                  <td>{g.active ? 'open' : g.closedAt ? `closed ${when(g.closedAt)}` : 'expired'}</td>
                  {viewer.isPlatformAdmin && (
                    <td class="actions">
                      {g.active && (
                        <ConfirmDelete
                          verb="Close"
                          what={`the grant opened ${when(g.createdAt)}`}
                          onConfirm={async () => {
                            if (await close.run({ id: g.id })) reload();
                          }}
                        />
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
          {data.breakGlassGrants.length === 0 && <p>No grant yet.</p>}
          <Problem error={close.problem} />
          {viewer.isPlatformAdmin && (
            <OpenForm tenantId={tenantId} tenantName={tenant.name} onOpened={reload} />
          )}
          <CopyAs document={GrantsQuery} variables={{ tenantId }} cli={curlOf(GrantsQuery, { tenantId })} />
        </>
      )}
    </section>
  );
}

function OpenForm(p: { tenantId: string; tenantName: string; onOpened: () => void }) {
  const open = useAction(OpenGrant);
  const [reason, setReason] = useState('');
  const [minutes, setMinutes] = useState('60');
  return (
    <form
      class="inline-form"
      aria-label={`Open a grant for ${p.tenantName}`}
      onSubmit={async (e) => {
        e.preventDefault();
        const opened = await open.run({
          in: { tenantId: p.tenantId, reason: reason.trim(), durationMinutes: Number(minutes) },
        });
        if (!opened) return;
        setReason('');
        p.onOpened();
      }}
    >
      <label>
        Reason (its auditors read it){' '}
        <textarea
          required
          minLength={10}
          maxLength={500}
          rows={2}
          cols={48}
          value={reason}
          onInput={(e) => setReason((e.target as HTMLTextAreaElement).value)}
        />
      </label>
      <label>
        Duration (minutes){' '}
        <input
          type="number"
          min={1}
          max={480}
          step={1}
          required
          class="narrow"
          value={minutes}
          onInput={(e) => setMinutes(inputValue(e))}
        />
      </label>
      <button type="submit" disabled={open.busy}>
        Open grant
      </button>
      <Problem error={open.problem} />
    </form>
  );
}
