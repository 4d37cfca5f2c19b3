// `fairway apply`: what the platform holds now, read through the graph as the caller. Only a
// platform admin may read cohorts, node pools and every tenant, so anyone else stops here
// (FORBIDDEN → EXIT.AUTH) before anything is written.
import type { CliContext } from './context.js';

export interface QuotaLine {
  flavor: string;
  resource: string;
  nominal: number;
  borrowingLimit: number | null;
  lendingLimit: number | null;
}

export interface Boundaries {
  imageRegistries: string[] | null;
  datasetLocations: string[] | null;
  artifactStores: string[] | null;
}

export interface ServerState {
  flavors: Map<
    string,
    {
      id: string;
      name: string;
      kind: string;
      gpuModel: string | null;
      slicesPerGpu: number | null;
      pricePerUnitHour: number;
    }
  >;
  priorityClasses: Map<
    string,
    {
      name: string;
      value: number;
      preemptible: string;
      description: string | null;
      requiresGrant: boolean;
      multiplier: number;
    }
  >;
  cohorts: Map<string, { id: string; name: string; parent: string | null; quotas: QuotaLine[] }>;
  nodePools: Map<
    string,
    {
      id: string;
      name: string;
      dedicated: boolean;
      nodes: { name: string; flavor: string; gpus: number; cpuMillis: number; memoryMiB: number }[];
    }
  >;
  tenants: Map<
    string,
    {
      id: string;
      slug: string;
      name: string;
      tier: string;
      isolationLevel: string;
      status: string;
      grantedPriorityClasses: string[];
      dataBoundaries: Boundaries | null;
      egressAllowlist: string[] | null;
    }
  >;
  queues: Map<
    string,
    {
      id: string;
      name: string;
      tenant: string;
      cohort: string | null;
      weight: number;
      queueingStrategy: string;
      isolationLevel: string | null;
      quotas: QuotaLine[];
    }
  >;
}

const QUOTA = 'flavor resource nominal borrowingLimit lendingLimit';

const TENANTS_PAGE = `tenants(first: 100, after: $after) {
    edges { node { id slug name tier isolationLevel status grantedPriorityClasses
      dataBoundaries { imageRegistries datasetLocations artifactStores } egressAllowlist } }
    pageInfo { hasNextPage endCursor }
  }`;

const TENANTS_QUERY = `query FairwayApplyTenants($after: String) { ${TENANTS_PAGE} }`;

// One request for a platform of up to 100 tenants; more are paged.
const PLATFORM_QUERY = `query FairwayApplyPlatform($after: String) {
  ${TENANTS_PAGE}
  flavors { id name kind gpuModel slicesPerGpu pricePerUnitHour }
  priceBook { multipliers { priorityClass multiplier current } }
  priorityClasses { name value preemptible description requiresGrant }
  cohorts { id name parentName quotas { ${QUOTA} } }
  nodePools { id name dedicated nodes { name flavor gpus cpuMillis memoryMiB } }
  queues { id name cohortName weight queueingStrategy isolationLevel quotas { ${QUOTA} } tenant { slug } }
}`;

interface PlatformData extends TenantsData {
  flavors: {
    id: string;
    name: string;
    kind: string;
    gpuModel: string | null;
    slicesPerGpu: number | null;
    pricePerUnitHour: number;
  }[];
  priceBook: {
    multipliers: { priorityClass: string; multiplier: number; current: boolean }[];
  };
  priorityClasses: {
    name: string;
    value: number;
    preemptible: string;
    description: string | null;
    requiresGrant: boolean;
  }[];
  cohorts: { id: string; name: string; parentName: string | null; quotas: QuotaLine[] }[];
  nodePools: ServerState['nodePools'] extends Map<string, infer V> ? V[] : never;
  queues: {
    id: string;
    name: string;
    cohortName: string | null;
    weight: number;
    queueingStrategy: string;
    isolationLevel: string | null;
    quotas: QuotaLine[];
    tenant: { slug: string };
  }[];
}

type TenantNode = ServerState['tenants'] extends Map<string, infer V> ? V : never;
interface TenantsData {
  tenants: { edges: { node: TenantNode }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
}

export async function readServerState(ctx: CliContext): Promise<ServerState> {
  const data = await ctx.request<PlatformData>(PLATFORM_QUERY, { after: null });
  // Flavor.pricePerUnitHour is the price book's version in force now; multipliers are read from the book.
  const currentMultiplier = new Map(
    data.priceBook.multipliers.filter((m) => m.current).map((m) => [m.priorityClass, m.multiplier]),
  );
  const tenants: TenantNode[] = [];
  let page: TenantsData = data;
  for (;;) {
    tenants.push(...page.tenants.edges.map((e) => e.node));
    if (!page.tenants.pageInfo.hasNextPage) break;
    page = await ctx.request<TenantsData>(TENANTS_QUERY, { after: page.tenants.pageInfo.endCursor });
  }
  return {
    flavors: new Map(data.flavors.map((f) => [f.name, f])),
    priorityClasses: new Map(
      data.priorityClasses.map((p) => [p.name, { ...p, multiplier: currentMultiplier.get(p.name) ?? 1 }]),
    ),
    cohorts: new Map(
      data.cohorts.map((c) => [c.name, { id: c.id, name: c.name, parent: c.parentName, quotas: c.quotas }]),
    ),
    nodePools: new Map(data.nodePools.map((p) => [p.name, p])),
    tenants: new Map(tenants.map((t) => [t.slug, t])),
    queues: new Map(
      data.queues.map((q) => [
        q.name,
        {
          id: q.id,
          name: q.name,
          tenant: q.tenant.slug,
          cohort: q.cohortName,
          weight: q.weight,
          queueingStrategy: q.queueingStrategy,
          isolationLevel: q.isolationLevel,
          quotas: q.quotas,
        },
      ]),
    ),
  };
}
