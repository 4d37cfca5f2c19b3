import { decodeGlobalID } from '@pothos/plugin-relay';
import { getAuditEvent } from '../../src/services/audit/index.js';
import { getQueue } from '../../src/services/cluster/index.js';
import type { ServiceContext } from '../../src/services/context.js';
import { getQuotaRequest } from '../../src/services/governance/index.js';
import { getJob } from '../../src/services/jobs/index.js';
import { getBudget } from '../../src/services/metering/index.js';
import {
  getApiToken,
  getBreakGlassGrant,
  getMember,
  getProject,
  getProjectMember,
  getTenant,
} from '../../src/services/tenancy/index.js';
import { badInput, notFound } from '../../src/shared/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';

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
    description:
      "Anything with an ID. Another tenant's ID answers NOT_FOUND, exactly like one that never existed.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => loadNode(ctx, String(id)) as never,
  }),
}));
