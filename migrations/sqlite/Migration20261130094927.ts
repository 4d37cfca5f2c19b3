import { Migration } from '@mikro-orm/migrations';

export class Migration20261130094927 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`tenants\` (\`id\` text not null, \`slug\` text not null, \`name\` text not null, \`tier\` text check (\`tier\` in ('STANDARD', 'PREMIUM', 'ENTERPRISE')) not null default 'STANDARD', \`isolation_level\` text check (\`isolation_level\` in ('DEDICATED', 'GUARANTEED', 'ELASTIC', 'BEST_EFFORT')) not null default 'ELASTIC', \`status\` text check (\`status\` in ('ACTIVE', 'SUSPENDED', 'ARCHIVED')) not null default 'ACTIVE', \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`tenants_slug_unique\` on \`tenants\` (\`slug\`);`);

    this.addSql(`create table \`projects\` (\`id\` text not null, \`tenant_id\` text not null, \`slug\` text not null, \`name\` text not null, \`description\` text null, \`status\` text check (\`status\` in ('ACTIVE', 'ARCHIVED')) not null default 'ACTIVE', \`archived_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`projects_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`projects_tenant_id_index\` on \`projects\` (\`tenant_id\`);`);
    this.addSql(`create unique index \`projects_tenant_id_slug_unique\` on \`projects\` (\`tenant_id\`, \`slug\`);`);

    this.addSql(`create table \`users\` (\`id\` text not null, \`email\` text not null, \`name\` text not null, \`external_id\` text null, \`is_platform_admin\` integer not null default false, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`users_email_unique\` on \`users\` (\`email\`);`);
    this.addSql(`create unique index \`users_external_id_unique\` on \`users\` (\`external_id\`);`);

    this.addSql(`create table \`memberships\` (\`id\` text not null, \`tenant_id\` text not null, \`user_id\` text not null, \`role\` text check (\`role\` in ('TENANT_ADMIN', 'MEMBER', 'VIEWER', 'AUDITOR')) not null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`memberships_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, constraint \`memberships_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`memberships_tenant_id_index\` on \`memberships\` (\`tenant_id\`);`);
    this.addSql(`create index \`memberships_user_id_index\` on \`memberships\` (\`user_id\`);`);
    this.addSql(`create unique index \`memberships_tenant_id_user_id_unique\` on \`memberships\` (\`tenant_id\`, \`user_id\`);`);

    this.addSql(`create table \`audit_events\` (\`id\` text not null, \`tenant_id\` text null, \`actor_id\` text null, \`actor_token_id\` text null, \`action\` text not null, \`target_type\` text null, \`target_id\` text null, \`input\` json not null, \`outcome\` text check (\`outcome\` in ('SUCCESS', 'DENIED', 'FAILED')) not null, \`error_code\` text null, \`request_id\` text not null, \`created_at\` datetime not null, constraint \`audit_events_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete set null on update cascade, constraint \`audit_events_actor_id_foreign\` foreign key(\`actor_id\`) references \`users\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`audit_events_tenant_id_index\` on \`audit_events\` (\`tenant_id\`);`);
    this.addSql(`create index \`audit_events_actor_id_index\` on \`audit_events\` (\`actor_id\`);`);
    this.addSql(`create index \`audit_events_tenant_id_id_index\` on \`audit_events\` (\`tenant_id\`, \`id\`);`);

    this.addSql(`create table \`api_tokens\` (\`id\` text not null, \`tenant_id\` text null, \`created_by_id\` text not null, \`name\` text not null, \`scopes\` json not null, \`token_hash\` text not null, \`prefix\` text not null, \`expires_at\` datetime not null, \`revoked_at\` datetime null, \`last_used_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`api_tokens_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, constraint \`api_tokens_created_by_id_foreign\` foreign key(\`created_by_id\`) references \`users\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`api_tokens_tenant_id_index\` on \`api_tokens\` (\`tenant_id\`);`);
    this.addSql(`create index \`api_tokens_created_by_id_index\` on \`api_tokens\` (\`created_by_id\`);`);
    this.addSql(`create unique index \`api_tokens_token_hash_unique\` on \`api_tokens\` (\`token_hash\`);`);
  }

}
