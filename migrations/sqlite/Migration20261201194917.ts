import { Migration } from '@mikro-orm/migrations';

export class Migration20261201194917 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`governance_settings\` (\`key\` text not null, \`value\` json not null, \`updated_at\` datetime not null, primary key (\`key\`));`);

    this.addSql(`create table \`isolation_policies\` (\`id\` text not null, \`name\` text not null, \`description\` text not null, \`level\` text not null, \`coefficients\` json not null, \`built_in\` integer not null default false, \`created_at\` datetime not null, \`updated_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`isolation_policies_name_unique\` on \`isolation_policies\` (\`name\`);`);

    this.addSql(`create table \`isolation_policy_rules\` (\`id\` text not null, \`position\` integer not null, \`tier\` text null, \`workload_type\` text null, \`sla_class\` text null, \`policy\` text not null, primary key (\`id\`));`);

    this.addSql(`create table \`quota_requests\` (\`id\` text not null, \`tenant_id\` text not null, \`queue_id\` text not null, \`flavor\` text not null, \`resource\` text not null, \`nominal\` double not null, \`previous_nominal\` double null, \`starts_at\` datetime null, \`expires_at\` datetime null, \`justification\` text not null, \`status\` text check (\`status\` in ('PENDING', 'APPROVED', 'ACTIVE', 'EXPIRED', 'REJECTED', 'CANCELLED')) not null default 'PENDING', \`requested_by_id\` text null, \`decided_by_id\` text null, \`decision_note\` text null, \`decided_at\` datetime null, \`applied_at\` datetime null, \`ended_at\` datetime null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`quota_requests_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, constraint \`quota_requests_queue_id_foreign\` foreign key(\`queue_id\`) references \`queues\`(\`id\`) on delete cascade on update cascade, constraint \`quota_requests_requested_by_id_foreign\` foreign key(\`requested_by_id\`) references \`users\`(\`id\`) on delete set null on update cascade, constraint \`quota_requests_decided_by_id_foreign\` foreign key(\`decided_by_id\`) references \`users\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`quota_requests_tenant_id_index\` on \`quota_requests\` (\`tenant_id\`);`);
    this.addSql(`create index \`quota_requests_queue_id_index\` on \`quota_requests\` (\`queue_id\`);`);
    this.addSql(`create index \`quota_requests_requested_by_id_index\` on \`quota_requests\` (\`requested_by_id\`);`);
    this.addSql(`create index \`quota_requests_decided_by_id_index\` on \`quota_requests\` (\`decided_by_id\`);`);
    this.addSql(`create index \`quota_requests_status_index\` on \`quota_requests\` (\`status\`);`);
    this.addSql(`create index \`quota_requests_tenant_id_id_index\` on \`quota_requests\` (\`tenant_id\`, \`id\`);`);

    this.addSql(`create table \`job_probe_samples\` (\`id\` text not null, \`job_id\` text not null, \`tenant_id\` text not null, \`at\` bigint not null, \`gpu_utilization\` double not null, \`memory_utilization\` double null, constraint \`job_probe_samples_job_id_foreign\` foreign key(\`job_id\`) references \`jobs\`(\`id\`) on delete cascade on update cascade, constraint \`job_probe_samples_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`job_probe_samples_job_id_index\` on \`job_probe_samples\` (\`job_id\`);`);
    this.addSql(`create index \`job_probe_samples_tenant_id_index\` on \`job_probe_samples\` (\`tenant_id\`);`);
    this.addSql(`create index \`job_probe_samples_job_id_at_index\` on \`job_probe_samples\` (\`job_id\`, \`at\`);`);
    this.addSql(`create index \`job_probe_samples_at_index\` on \`job_probe_samples\` (\`at\`);`);

    this.addSql(`alter table \`queues\` add column \`workload_type\` text null;`);
    this.addSql(`alter table \`queues\` add column \`sla_class\` text null;`);
    this.addSql(`alter table \`queues\` add column \`isolation_policy\` text null;`);
    this.addSql(`alter table \`queues\` add column \`controller_setting\` json null;`);

    this.addSql(`alter table \`jobs\` add column \`workload_type\` text null;`);
    this.addSql(`alter table \`jobs\` add column \`latency_sensitive\` integer not null default false;`);
    this.addSql(`alter table \`jobs\` add column \`probe_summary\` json null;`);
    this.addSql(`alter table \`jobs\` add column \`governance_flag\` json null;`);

    this.addSql(`pragma foreign_keys = off;`);
    this.addSql(`create table \`job_events__temp_alter\` (\`id\` text not null, \`job_id\` text not null, \`tenant_id\` text not null, \`type\` text check (\`type\` in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ADMITTED_NOT_RUNNING', 'FLAGGED')) not null, \`reason\` text null, \`message\` text null, \`data\` json null, \`at\` datetime not null, constraint \`job_events_job_id_foreign\` foreign key(\`job_id\`) references \`jobs\`(\`id\`) on delete cascade on update cascade, constraint \`job_events_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`insert into \`job_events__temp_alter\` select \`id\`, \`job_id\`, \`tenant_id\`, \`type\`, \`reason\`, \`message\`, \`data\`, \`at\` from \`job_events\`;`);
    this.addSql(`drop table \`job_events\`;`);
    this.addSql(`alter table \`job_events__temp_alter\` rename to \`job_events\`;`);
    this.addSql(`create index \`job_events_job_id_index\` on \`job_events\` (\`job_id\`);`);
    this.addSql(`create index \`job_events_tenant_id_index\` on \`job_events\` (\`tenant_id\`);`);
    this.addSql(`create index \`job_events_job_id_id_index\` on \`job_events\` (\`job_id\`, \`id\`);`);
    this.addSql(`pragma foreign_keys = on;`);
  }

}
