import { Migration } from '@mikro-orm/migrations';

/** Project roles, break-glass grants, granted priority classes and pools, data boundaries. */
export class Migration20261201020823 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "project_memberships" ("id" uuid not null, "tenant_id" uuid not null, "project_id" uuid not null, "user_id" uuid not null, "role" text check ("role" in ('PROJECT_ADMIN', 'CONTRIBUTOR', 'VIEWER')) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "project_memberships_pkey" primary key ("id"));`);
    this.addSql(`create index "project_memberships_user_id_index" on "project_memberships" ("user_id");`);
    this.addSql(`alter table "project_memberships" add constraint "project_memberships_project_id_user_id_unique" unique ("project_id", "user_id");`);

    this.addSql(`create table "break_glass_grants" ("id" uuid not null, "tenant_id" uuid not null, "operator_id" uuid not null, "reason" varchar(500) not null, "expires_at" timestamptz not null, "closed_at" timestamptz null, "created_at" timestamptz not null, constraint "break_glass_grants_pkey" primary key ("id"));`);
    this.addSql(`create index "break_glass_grants_operator_id_expires_at_index" on "break_glass_grants" ("operator_id", "expires_at");`);

    this.addSql(`alter table "project_memberships" add constraint "project_memberships_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "project_memberships" add constraint "project_memberships_project_id_foreign" foreign key ("project_id") references "projects" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "project_memberships" add constraint "project_memberships_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "break_glass_grants" add constraint "break_glass_grants_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "break_glass_grants" add constraint "break_glass_grants_operator_id_foreign" foreign key ("operator_id") references "users" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "priority_classes" add column "requires_grant" boolean not null default false;`);

    this.addSql(`alter table "tenants" add column "projects_open" boolean not null default false, add column "default_project_id" uuid null, add column "granted_priority_classes" jsonb null, add column "data_boundaries" jsonb null;`);

    this.addSql(`alter table "projects" add column "job_visibility" text check ("job_visibility" in ('PROJECT', 'SUBMITTER')) not null default 'PROJECT', add column "granted_priority_classes" jsonb null, add column "granted_pools" jsonb null, add column "data_boundaries" jsonb null;`);

    // Existing data keeps working (issue 10):
    // - tenants that existed before project roles keep today's visibility: every member reads every job;
    this.addSql(`update "tenants" set "projects_open" = true;`);
    // - every tenant has an active project a submit can default to (a "default" one where there
    //   was none, or only archived ones: an archived default would refuse every submit);
    this.addSql(`insert into "projects" ("id", "tenant_id", "slug", "name", "description", "status", "archived_at", "default_queue_id", "job_visibility", "created_at", "updated_at") select gen_random_uuid(), "t"."id", case when exists (select 1 from "projects" "d" where "d"."tenant_id" = "t"."id" and "d"."slug" = 'default') then 'default-' || substr(md5(random()::text), 1, 6) else 'default' end, 'Default', 'Made when projects got members: jobs that had no project.', 'ACTIVE', null, null, 'PROJECT', "t"."created_at", "t"."created_at" from "tenants" "t" where not exists (select 1 from "projects" "p" where "p"."tenant_id" = "t"."id" and "p"."status" = 'ACTIVE');`);
    this.addSql(`update "tenants" set "default_project_id" = (select "p"."id" from "projects" "p" where "p"."tenant_id" = "tenants"."id" order by ("p"."status" = 'ACTIVE') desc, "p"."created_at", "p"."id" limit 1);`);
    // - jobs without a project move to their tenant's default project;
    this.addSql(`update "jobs" set "project_id" = (select "t"."default_project_id" from "tenants" "t" where "t"."id" = "jobs"."tenant_id") where "project_id" is null;`);
    // - members keep submitting where they could: contributors of every project of their tenant;
    this.addSql(`insert into "project_memberships" ("id", "tenant_id", "project_id", "user_id", "role", "created_at", "updated_at") select gen_random_uuid(), "m"."tenant_id", "p"."id", "m"."user_id", 'CONTRIBUTOR', "m"."created_at", "m"."created_at" from "memberships" "m" join "projects" "p" on "p"."tenant_id" = "m"."tenant_id" where "m"."role" = 'MEMBER';`);
    // - projects keep the dedicated pools their tenant's queues already run on.
    this.addSql(`update "projects" set "granted_pools" = (select jsonb_agg(distinct "q"."dedicated_pool") from "queues" "q" where "q"."tenant_id" = "projects"."tenant_id" and "q"."dedicated_pool" is not null) where exists (select 1 from "queues" "q" where "q"."tenant_id" = "projects"."tenant_id" and "q"."dedicated_pool" is not null);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "project_memberships" cascade;`);

    this.addSql(`drop table if exists "break_glass_grants" cascade;`);

    this.addSql(`alter table "priority_classes" drop column "requires_grant";`);

    this.addSql(`alter table "projects" drop column "job_visibility", drop column "granted_priority_classes", drop column "granted_pools", drop column "data_boundaries";`);

    this.addSql(`alter table "tenants" drop column "projects_open", drop column "default_project_id", drop column "granted_priority_classes", drop column "data_boundaries";`);
  }

}
