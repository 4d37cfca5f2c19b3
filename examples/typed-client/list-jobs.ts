// List my jobs with the CLI's typed documents: `variables` and `jobs` are typed from
// schema/schema.graphql by gql.tada, so a renamed field fails tsc, not production.
//   FAIRWAY_SERVER=http://localhost:4000/graphql FAIRWAY_TOKEN=$MAX npx tsx examples/typed-client/list-jobs.ts
import { fileURLToPath } from 'node:url';
import { ListJobs, type ResultOf, text, type VariablesOf, WhoAmI } from '../../src/cli/tenant/operations.js';

async function request<D extends typeof ListJobs | typeof WhoAmI>(
  server: string,
  token: string,
  document: D,
  variables: VariablesOf<D>,
): Promise<ResultOf<D>> {
  const response = await fetch(server, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: text(document), variables }),
  });
  const body = (await response.json()) as {
    data?: ResultOf<D>;
    errors?: { message: string; extensions?: { code?: string } }[];
  };
  if (body.errors?.length || !body.data)
    throw new Error(
      body.errors?.map((e) => `${e.message} [${e.extensions?.code}]`).join('; ') ?? `HTTP ${response.status}`,
    );
  return body.data;
}

/** My tenant's newest jobs, as "state name (queue)" lines. */
export async function listMyJobs(server: string, token: string, last = 10): Promise<string[]> {
  const { viewer } = await request(server, token, WhoAmI, {});
  const tenant = viewer.memberships[0]?.tenant;
  if (!tenant) throw new Error('this token belongs to no tenant');
  const { jobs } = await request(server, token, ListJobs, {
    tenantId: tenant.id,
    last,
    filter: { states: ['PENDING', 'ADMITTED', 'RUNNING'] },
  });
  return jobs.edges.map(
    ({ node }) =>
      `${node.state.padEnd(9)} ${node.name} (${node.queue.name})${node.position?.inQueue ? ` #${node.position.inQueue}` : ''}`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const line of await listMyJobs(
    process.env.FAIRWAY_SERVER ?? 'http://localhost:4000/graphql',
    process.env.FAIRWAY_TOKEN ?? '',
  ))
    console.log(line);
}
