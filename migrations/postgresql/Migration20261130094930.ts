import { Migration } from '@mikro-orm/migrations';

export class Migration20261130094930 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "tenants" ("id" uuid not null, "slug" varchar(63) not null, "name" varchar(200) not null, "tier" text check ("tier" in ('STANDARD', 'PREMIUM', 'ENTERPRISE')) not null default 'STANDARD', "isolation_level" text check ("isolation_level" in ('DEDICATED', 'GUARANTEED', 'ELASTIC', 'BEST_EFFORT')) not null default 'ELASTIC', "status" text check ("status" in ('ACTIVE', 'SUSPENDED', 'ARCHIVED')) not null default 'ACTIVE', "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "tenants_pkey" primary key ("id"));`);
    this.addSql(`alter table "tenants" add constraint "tenants_slug_unique" unique ("slug");`);

    this.addSql(`create table "projects" ("id" uuid not null, "tenant_id" uuid not null, "slug" varchar(63) not null, "name" varchar(200) not null, "description" text null, "status" text check ("status" in ('ACTIVE', 'ARCHIVED')) not null default 'ACTIVE', "archived_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "projects_pkey" primary key ("id"));`);
    this.addSql(`alter table "projects" add constraint "projects_tenant_id_slug_unique" unique ("tenant_id", "slug");`);

    this.addSql(`create table "users" ("id" uuid not null, "email" varchar(254) not null, "name" varchar(200) not null, "external_id" varchar(255) null, "is_platform_admin" boolean not null default false, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "users_pkey" primary key ("id"));`);
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);
    this.addSql(`alter table "users" add constraint "users_external_id_unique" unique ("external_id");`);

    this.addSql(`create table "memberships" ("id" uuid not null, "tenant_id" uuid not null, "user_id" uuid not null, "role" text check ("role" in ('TENANT_ADMIN', 'MEMBER', 'VIEWER', 'AUDITOR')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "memberships_pkey" primary key ("id"));`);
    this.addSql(`alter table "memberships" add constraint "memberships_tenant_id_user_id_unique" unique ("tenant_id", "user_id");`);

    this.addSql(`create table "audit_events" ("id" uuid not null, "tenant_id" uuid null, "actor_id" uuid null, "actor_token_id" varchar(36) null, "action" varchar(64) not null, "target_type" varchar(64) null, "target_id" varchar(36) null, "input" jsonb not null, "outcome" text check ("outcome" in ('SUCCESS', 'DENIED', 'FAILED')) not null, "error_code" varchar(32) null, "request_id" varchar(64) not null, "created_at" timestamptz not null, constraint "audit_events_pkey" primary key ("id"));`);
    this.addSql(`create index "audit_events_tenant_id_id_index" on "audit_events" ("tenant_id", "id");`);

    this.addSql(`create table "api_tokens" ("id" uuid not null, "tenant_id" uuid null, "created_by_id" uuid not null, "name" varchar(100) not null, "scopes" jsonb not null, "token_hash" varchar(64) not null, "prefix" varchar(16) not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, "last_used_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "api_tokens_pkey" primary key ("id"));`);
    this.addSql(`alter table "api_tokens" add constraint "api_tokens_token_hash_unique" unique ("token_hash");`);

    this.addSql(`alter table "projects" add constraint "projects_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "memberships" add constraint "memberships_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "memberships" add constraint "memberships_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "audit_events" add constraint "audit_events_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "audit_events" add constraint "audit_events_actor_id_foreign" foreign key ("actor_id") references "users" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "api_tokens" add constraint "api_tokens_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "api_tokens" add constraint "api_tokens_created_by_id_foreign" foreign key ("created_by_id") references "users" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "projects" drop constraint "projects_tenant_id_foreign";`);

    this.addSql(`alter table "memberships" drop constraint "memberships_tenant_id_foreign";`);

    this.addSql(`alter table "audit_events" drop constraint "audit_events_tenant_id_foreign";`);

    this.addSql(`alter table "api_tokens" drop constraint "api_tokens_tenant_id_foreign";`);

    this.addSql(`alter table "memberships" drop constraint "memberships_user_id_foreign";`);

    this.addSql(`alter table "audit_events" drop constraint "audit_events_actor_id_foreign";`);

    this.addSql(`alter table "api_tokens" drop constraint "api_tokens_created_by_id_foreign";`);

    this.addSql(`drop table if exists "tenants" cascade;`);

    this.addSql(`drop table if exists "projects" cascade;`);

    this.addSql(`drop table if exists "users" cascade;`);

    this.addSql(`drop table if exists "memberships" cascade;`);

    this.addSql(`drop table if exists "audit_events" cascade;`);

    this.addSql(`drop table if exists "api_tokens" cascade;`);
  }

}
