import { Migration } from '@mikro-orm/migrations';

export class Migration20261202034821 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`jobs\` add column \`max_retries\` integer not null default 0;`);
    this.addSql(`alter table \`jobs\` add column \`disruption_count\` integer not null default 0;`);
    this.addSql(`alter table \`jobs\` add column \`stopping_since\` bigint null;`);
    this.addSql(`alter table \`jobs\` add column \`stopping_until\` bigint null;`);
    this.addSql(`alter table \`jobs\` add column \`stopping_admission\` json null;`);
    this.addSql(`create index \`jobs_stopping_until_index\` on \`jobs\` (\`stopping_until\`);`);

    this.addSql(`pragma foreign_keys = off;`);
    this.addSql(`create table \`usage_records__temp_alter\` (\`id\` text not null, \`job_id\` text not null, \`tenant_id\` text not null, \`project_id\` text null, \`queue_id\` text not null, \`user_id\` text null, \`priority_class\` text not null, \`flavor\` text not null, \`started_at\` datetime not null, \`ended_at\` datetime not null, \`duration_ms\` bigint not null, \`gpu_units\` double not null, \`gpu_seconds\` double not null, \`cpu_seconds\` double not null, \`memory_gib_seconds\` double not null, \`used_gpu_seconds\` double null, \`unit_price_per_hour\` double not null, \`cost\` double not null, \`closed_by\` text check (\`closed_by\` in ('checkpoint', 'preempted', 'disrupted', 'grace', 'succeeded', 'failed', 'cancelled', 'requeued')) not null, \`first_of_job\` integer not null default false, constraint \`usage_records_job_id_foreign\` foreign key(\`job_id\`) references \`jobs\`(\`id\`) on delete cascade on update cascade, constraint \`usage_records_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`insert into \`usage_records__temp_alter\` select \`id\`, \`job_id\`, \`tenant_id\`, \`project_id\`, \`queue_id\`, \`user_id\`, \`priority_class\`, \`flavor\`, \`started_at\`, \`ended_at\`, \`duration_ms\`, \`gpu_units\`, \`gpu_seconds\`, \`cpu_seconds\`, \`memory_gib_seconds\`, \`used_gpu_seconds\`, \`unit_price_per_hour\`, \`cost\`, \`closed_by\`, \`first_of_job\` from \`usage_records\`;`);
    this.addSql(`drop table \`usage_records\`;`);
    this.addSql(`alter table \`usage_records__temp_alter\` rename to \`usage_records\`;`);
    this.addSql(`create index \`usage_records_job_id_index\` on \`usage_records\` (\`job_id\`);`);
    this.addSql(`create index \`usage_records_tenant_id_index\` on \`usage_records\` (\`tenant_id\`);`);
    this.addSql(`create index \`usage_records_tenant_id_started_at_index\` on \`usage_records\` (\`tenant_id\`, \`started_at\`);`);
    this.addSql(`create unique index \`usage_records_job_id_flavor_started_at_unique\` on \`usage_records\` (\`job_id\`, \`flavor\`, \`started_at\`);`);
    this.addSql(`create table \`job_events__temp_alter\` (\`id\` text not null, \`job_id\` text not null, \`tenant_id\` text not null, \`type\` text check (\`type\` in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ADMITTED_NOT_RUNNING', 'FLAGGED', 'DISRUPTED')) not null, \`reason\` text null, \`message\` text null, \`data\` json null, \`at\` datetime not null, constraint \`job_events_job_id_foreign\` foreign key(\`job_id\`) references \`jobs\`(\`id\`) on delete cascade on update cascade, constraint \`job_events_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`insert into \`job_events__temp_alter\` select \`id\`, \`job_id\`, \`tenant_id\`, \`type\`, \`reason\`, \`message\`, \`data\`, \`at\` from \`job_events\`;`);
    this.addSql(`drop table \`job_events\`;`);
    this.addSql(`alter table \`job_events__temp_alter\` rename to \`job_events\`;`);
    this.addSql(`create index \`job_events_job_id_index\` on \`job_events\` (\`job_id\`);`);
    this.addSql(`create index \`job_events_tenant_id_index\` on \`job_events\` (\`tenant_id\`);`);
    this.addSql(`create index \`job_events_job_id_id_index\` on \`job_events\` (\`job_id\`, \`id\`);`);
    this.addSql(`pragma foreign_keys = on;`);
  }

}
