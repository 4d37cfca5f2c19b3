import { Migration } from '@mikro-orm/migrations';

/** A fresh id per row, in UUID form (version 4 bits: rows made here are not time-ordered). */
const NEW_UUID = "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))";

/** Project roles, break-glass grants, granted priority classes and pools, data boundaries. */
export class Migration20261201020820 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`project_memberships\` (\`id\` text not null, \`tenant_id\` text not null, \`project_id\` text not null, \`user_id\` text not null, \`role\` text check (\`role\` in ('PROJECT_ADMIN', 'CONTRIBUTOR', 'VIEWER')) not null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`project_memberships_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, constraint \`project_memberships_project_id_foreign\` foreign key(\`project_id\`) references \`projects\`(\`id\`) on delete cascade on update cascade, constraint \`project_memberships_user_id_foreign\` foreign key(\`user_id\`) references \`users\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`project_memberships_tenant_id_index\` on \`project_memberships\` (\`tenant_id\`);`);
    this.addSql(`create index \`project_memberships_project_id_index\` on \`project_memberships\` (\`project_id\`);`);
    this.addSql(`create index \`project_memberships_user_id_index\` on \`project_memberships\` (\`user_id\`);`);
    this.addSql(`create unique index \`project_memberships_project_id_user_id_unique\` on \`project_memberships\` (\`project_id\`, \`user_id\`);`);

    this.addSql(`create table \`break_glass_grants\` (\`id\` text not null, \`tenant_id\` text not null, \`operator_id\` text not null, \`reason\` text not null, \`expires_at\` datetime not null, \`closed_at\` datetime null, \`created_at\` datetime not null, constraint \`break_glass_grants_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, constraint \`break_glass_grants_operator_id_foreign\` foreign key(\`operator_id\`) references \`users\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`break_glass_grants_tenant_id_index\` on \`break_glass_grants\` (\`tenant_id\`);`);
    this.addSql(`create index \`break_glass_grants_operator_id_index\` on \`break_glass_grants\` (\`operator_id\`);`);
    this.addSql(`create index \`break_glass_grants_operator_id_expires_at_index\` on \`break_glass_grants\` (\`operator_id\`, \`expires_at\`);`);

    this.addSql(`alter table \`priority_classes\` add column \`requires_grant\` integer not null default false;`);

    this.addSql(`alter table \`tenants\` add column \`projects_open\` integer not null default false;`);
    this.addSql(`alter table \`tenants\` add column \`default_project_id\` text null;`);
    this.addSql(`alter table \`tenants\` add column \`granted_priority_classes\` json null;`);
    this.addSql(`alter table \`tenants\` add column \`data_boundaries\` json null;`);

    this.addSql(`alter table \`projects\` add column \`job_visibility\` text check (\`job_visibility\` in ('PROJECT', 'SUBMITTER')) not null default 'PROJECT';`);
    this.addSql(`alter table \`projects\` add column \`granted_priority_classes\` json null;`);
    this.addSql(`alter table \`projects\` add column \`granted_pools\` json null;`);
    this.addSql(`alter table \`projects\` add column \`data_boundaries\` json null;`);

    // Existing data keeps working (issue 10):
    // - tenants that existed before project roles keep today's visibility: every member reads every job;
    this.addSql(`update \`tenants\` set \`projects_open\` = 1;`);
    // - every tenant has an active project a submit can default to (a "default" one where there
    //   was none, or only archived ones: an archived default would refuse every submit);
    this.addSql(`insert into \`projects\` (\`id\`, \`tenant_id\`, \`slug\`, \`name\`, \`description\`, \`status\`, \`archived_at\`, \`default_queue_id\`, \`job_visibility\`, \`created_at\`, \`updated_at\`) select ${NEW_UUID}, \`t\`.\`id\`, case when exists (select 1 from \`projects\` \`d\` where \`d\`.\`tenant_id\` = \`t\`.\`id\` and \`d\`.\`slug\` = 'default') then 'default-' || lower(hex(randomblob(3))) else 'default' end, 'Default', 'Made when projects got members: jobs that had no project.', 'ACTIVE', null, null, 'PROJECT', \`t\`.\`created_at\`, \`t\`.\`created_at\` from \`tenants\` \`t\` where not exists (select 1 from \`projects\` \`p\` where \`p\`.\`tenant_id\` = \`t\`.\`id\` and \`p\`.\`status\` = 'ACTIVE');`);
    this.addSql(`update \`tenants\` set \`default_project_id\` = (select \`p\`.\`id\` from \`projects\` \`p\` where \`p\`.\`tenant_id\` = \`tenants\`.\`id\` order by \`p\`.\`status\` = 'ACTIVE' desc, \`p\`.\`created_at\`, \`p\`.\`id\` limit 1);`);
    // - jobs without a project move to their tenant's default project;
    this.addSql(`update \`jobs\` set \`project_id\` = (select \`t\`.\`default_project_id\` from \`tenants\` \`t\` where \`t\`.\`id\` = \`jobs\`.\`tenant_id\`) where \`project_id\` is null;`);
    // - members keep submitting where they could: contributors of every project of their tenant;
    this.addSql(`insert into \`project_memberships\` (\`id\`, \`tenant_id\`, \`project_id\`, \`user_id\`, \`role\`, \`created_at\`, \`updated_at\`) select ${NEW_UUID}, \`m\`.\`tenant_id\`, \`p\`.\`id\`, \`m\`.\`user_id\`, 'CONTRIBUTOR', \`m\`.\`created_at\`, \`m\`.\`created_at\` from \`memberships\` \`m\` join \`projects\` \`p\` on \`p\`.\`tenant_id\` = \`m\`.\`tenant_id\` where \`m\`.\`role\` = 'MEMBER';`);
    // - projects keep the dedicated pools their tenant's queues already run on.
    this.addSql(`update \`projects\` set \`granted_pools\` = (select json_group_array(distinct \`q\`.\`dedicated_pool\`) from \`queues\` \`q\` where \`q\`.\`tenant_id\` = \`projects\`.\`tenant_id\` and \`q\`.\`dedicated_pool\` is not null) where exists (select 1 from \`queues\` \`q\` where \`q\`.\`tenant_id\` = \`projects\`.\`tenant_id\` and \`q\`.\`dedicated_pool\` is not null);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`project_memberships\`;`);
    this.addSql(`drop table if exists \`break_glass_grants\`;`);
    for (const column of ['requires_grant']) this.addSql(`alter table \`priority_classes\` drop column \`${column}\`;`);
    for (const column of ['projects_open', 'default_project_id', 'granted_priority_classes', 'data_boundaries']) this.addSql(`alter table \`tenants\` drop column \`${column}\`;`);
    for (const column of ['job_visibility', 'granted_priority_classes', 'granted_pools', 'data_boundaries']) this.addSql(`alter table \`projects\` drop column \`${column}\`;`);
  }

}
