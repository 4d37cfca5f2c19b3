import { decodeGlobalID } from '@pothos/plugin-relay';
import { getApiToken } from '../../src/services/tenancy/api-tokens.js';
import { getAuditEvent } from '../../src/services/audit/audit-events.js';
import { getBreakGlassGrant } from '../../src/services/tenancy/break-glass.js';
import { getMember } from '../../src/services/tenancy/members.js';
import { getProject } from '../../src/services/tenancy/projects.js';
import { getProjectMember } from '../../src/services/tenancy/project-members.js';
import { getTenant } from '../../src/services/tenancy/tenants.js';
import { getJob } from '../../src/services/jobs/jobs.js';
import { getQueue } from '../../src/services/cluster/cluster.js';
import { getBudget } from '../../src/services/metering/budgets.js';
import { getQuotaRequest } from '../../src/services/governance/quota-requests.js';
import type { ServiceContext } from '../../src/services/context.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { badInput, notFound } from '../../src/shared/client-errors.js';

/** Typename → loader. A node type without an entry here cannot be fetched by id. */
const loaders: Record<string, (ctx: ServiceContext, id: string) => Promise<object>> = {
  Tenant: getTenant,
  Project: getProject,
  ProjectMember: getProjectMember,
  Member: getMember,
  ApiToken: getApiToken,
  AuditEvent: getAuditEvent,
  Job: getJob,
  Queue: getQueue,
  BreakGlassGrant: getBreakGlassGrant,
  Budget: getBudget,
  QuotaRequest: getQuotaRequest,
};

async function loadNode(ctx: ServiceContext, globalId: string): Promise<object> {
  let typename: string;
  try {
    typename = decodeGlobalID(globalId).typename;
  } catch {
    throw badInput(`"${globalId.slice(0, 40)}" is not a valid ID.`);
  }
  const loader = loaders[typename];
  // decodeId rejects malformed ids first, so an unknown type is a well-formed id of nothing.
  const id = decodeId(globalId, loader ? typename : '\0');
  if (!loader) throw notFound('Node');
  return loader(ctx, id);
}

builder.queryFields((t) => ({
  node: t.field({
    type: builder.nodeInterfaceRef(),
    description: "Anything with an ID. Another tenant's ID answers NOT_FOUND, exactly like one that never existed.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => loadNode(ctx, String(id)) as never,
  }),
}));
