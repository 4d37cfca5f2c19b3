import fs from 'node:fs';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import { ApiToken, Membership, Project, Tenant, User, type TenantRole } from '../persistence/entities.js';
import { displayPrefix, generateApiTokenSecret, hashApiTokenSecret } from '../auth/api-token-secret.js';
import { ROLE_CAPABILITIES } from '../auth/capabilities.js';
import { TENANT_FILTER } from '../persistence/entities.js';

export interface DemoCredential {
  who: string;
  email: string;
  tenant: string | null;
  role: TenantRole | 'PLATFORM_ADMIN';
  token: string;
}

const DEMO_TENANTS = [
  {
    slug: 'aurora-research',
    name: 'Aurora Research',
    tier: 'PREMIUM' as const,
    isolationLevel: 'GUARANTEED' as const,
    project: { slug: 'llm-pretraining', name: 'LLM pre-training', description: 'Foundation model runs on the shared H100 pool.' },
    people: [
      { email: 'ada@aurora.example', name: 'Ada Admin', role: 'TENANT_ADMIN' as const },
      { email: 'max@aurora.example', name: 'Max Member', role: 'MEMBER' as const },
      { email: 'vera@aurora.example', name: 'Vera Viewer', role: 'VIEWER' as const },
      { email: 'otto@aurora.example', name: 'Otto Auditor', role: 'AUDITOR' as const },
    ],
  },
  {
    slug: 'borealis-inference',
    name: 'Borealis Inference',
    tier: 'ENTERPRISE' as const,
    isolationLevel: 'ELASTIC' as const,
    project: { slug: 'chat-serving', name: 'Chat serving', description: 'Online inference for the support assistant.' },
    people: [
      { email: 'bea@borealis.example', name: 'Bea Admin', role: 'TENANT_ADMIN' as const },
      { email: 'bob@borealis.example', name: 'Bob Member', role: 'MEMBER' as const },
    ],
  },
];

/**
 * Seeds the demo on an empty database (a platform admin, two tenants with members, a
 * project each and an API token per person) and writes the tokens to
 * `<dataDir>/demo-credentials.json`. Does nothing when any tenant exists.
 */
export async function seedDemo(orm: MikroORM, dataDir: string, now: () => number = Date.now): Promise<DemoCredential[] | null> {
  const system = orm.em.fork({ clear: true });
  system.setFilterParams(TENANT_FILTER, { all: true });
  if ((await system.count(Tenant, {})) > 0) return null;
  const credentials: DemoCredential[] = [];
  const yearFromNow = new Date(now() + 365 * 86_400_000);
  await system.transactional(async (em) => {
    const mint = (tenant: Tenant | null, user: User, scopes: string[], name: string) => {
      const secret = generateApiTokenSecret();
      em.create(ApiToken, { tenant, createdBy: user, name, scopes, tokenHash: hashApiTokenSecret(secret), prefix: displayPrefix(secret), expiresAt: yearFromNow, revokedAt: null, lastUsedAt: null });
      return secret;
    };
    const admin = em.create(User, { email: 'admin@fairway.example', name: 'Platform Admin', isPlatformAdmin: true, externalId: null });
    credentials.push({ who: admin.name, email: admin.email, tenant: null, role: 'PLATFORM_ADMIN', token: mint(null, admin, [], 'demo platform token') });
    for (const spec of DEMO_TENANTS) {
      const tenant = em.create(Tenant, { slug: spec.slug, name: spec.name, tier: spec.tier, isolationLevel: spec.isolationLevel, status: 'ACTIVE' });
      em.create(Project, { tenant, ...spec.project, status: 'ACTIVE', archivedAt: null });
      for (const person of spec.people) {
        const user = em.create(User, { email: person.email, name: person.name, isPlatformAdmin: false, externalId: null });
        em.create(Membership, { tenant, user, role: person.role });
        const token = mint(tenant, user, [...ROLE_CAPABILITIES[person.role]].sort(), `demo token (${person.role.toLowerCase()})`);
        credentials.push({ who: person.name, email: person.email, tenant: spec.slug, role: person.role, token });
      }
    }
  });
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(demoCredentialsPath(dataDir), JSON.stringify({ note: 'Demo API tokens. Send as "Authorization: Bearer <token>".', credentials }, null, 2), { mode: 0o600 });
  return credentials;
}

export function demoCredentialsPath(dataDir: string): string {
  return path.join(dataDir, 'demo-credentials.json');
}

export function readDemoCredentials(dataDir: string): DemoCredential[] | null {
  try {
    return (JSON.parse(fs.readFileSync(demoCredentialsPath(dataDir), 'utf8')) as { credentials: DemoCredential[] }).credentials;
  } catch {
    return null;
  }
}
