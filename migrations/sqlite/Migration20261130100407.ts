import { Migration } from '@mikro-orm/migrations';

export class Migration20261130100407 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`cohorts\` (\`id\` text not null, \`name\` text not null, \`parent_id\` text null, \`quotas\` json not null, \`created_at\` datetime not null, constraint \`cohorts_parent_id_foreign\` foreign key(\`parent_id\`) references \`cohorts\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create unique index \`cohorts_name_unique\` on \`cohorts\` (\`name\`);`);
    this.addSql(`create index \`cohorts_parent_id_index\` on \`cohorts\` (\`parent_id\`);`);

    this.addSql(`create table \`flavors\` (\`id\` text not null, \`name\` text not null, \`kind\` text check (\`kind\` in ('gpu', 'mig', 'timeslice')) not null, \`gpu_model\` text null, \`slices_per_gpu\` integer null, \`price_per_unit_hour\` double not null default 0, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`flavors_name_unique\` on \`flavors\` (\`name\`);`);

    this.addSql(`create table \`outbox\` (\`id\` text not null, \`kind\` text not null, \`payload\` json not null, \`created_at\` datetime not null, \`performed_at\` datetime null, primary key (\`id\`));`);
    this.addSql(`create index \`outbox_performed_at_id_index\` on \`outbox\` (\`performed_at\`, \`id\`);`);

    this.addSql(`create table \`priority_classes\` (\`id\` text not null, \`name\` text not null, \`value\` integer not null, \`preemptible\` text check (\`preemptible\` in ('yes', 'no', 'reclaim-only')) not null, \`description\` text null, primary key (\`id\`));`);
    this.addSql(`create unique index \`priority_classes_name_unique\` on \`priority_classes\` (\`name\`);`);

    this.addSql(`create table \`queues\` (\`id\` text not null, \`name\` text not null, \`tenant_id\` text not null, \`cohort_id\` text null, \`quotas\` json not null, \`weight\` double not null default 1, \`queueing_strategy\` text check (\`queueing_strategy\` in ('StrictFIFO', 'BestEffortFIFO')) not null default 'BestEffortFIFO', \`preemption\` json not null, \`isolation_level\` text null, \`time_windows\` json not null, \`dedicated_pool\` text null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`queues_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, constraint \`queues_cohort_id_foreign\` foreign key(\`cohort_id\`) references \`cohorts\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create unique index \`queues_name_unique\` on \`queues\` (\`name\`);`);
    this.addSql(`create index \`queues_tenant_id_index\` on \`queues\` (\`tenant_id\`);`);
    this.addSql(`create index \`queues_cohort_id_index\` on \`queues\` (\`cohort_id\`);`);

    this.addSql(`create table \`node_pools\` (\`id\` text not null, \`name\` text not null, \`dedicated_tenant_id\` text null, \`created_at\` datetime not null, constraint \`node_pools_dedicated_tenant_id_foreign\` foreign key(\`dedicated_tenant_id\`) references \`tenants\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create unique index \`node_pools_name_unique\` on \`node_pools\` (\`name\`);`);
    this.addSql(`create index \`node_pools_dedicated_tenant_id_index\` on \`node_pools\` (\`dedicated_tenant_id\`);`);

    this.addSql(`create table \`nodes\` (\`id\` text not null, \`name\` text not null, \`pool_id\` text not null, \`flavor_id\` text not null, \`gpus\` integer not null, \`cpu\` integer not null, \`memory\` integer not null, \`created_at\` datetime not null, constraint \`nodes_pool_id_foreign\` foreign key(\`pool_id\`) references \`node_pools\`(\`id\`) on delete cascade on update cascade, constraint \`nodes_flavor_id_foreign\` foreign key(\`flavor_id\`) references \`flavors\`(\`id\`) on update cascade, primary key (\`id\`));`);
    this.addSql(`create unique index \`nodes_name_unique\` on \`nodes\` (\`name\`);`);
    this.addSql(`create index \`nodes_pool_id_index\` on \`nodes\` (\`pool_id\`);`);
    this.addSql(`create index \`nodes_flavor_id_index\` on \`nodes\` (\`flavor_id\`);`);

    this.addSql(`create table \`jobs\` (\`id\` text not null, \`tenant_id\` text not null, \`project_id\` text null, \`queue_id\` text not null, \`submitted_by_id\` text null, \`name\` text not null, \`priority_class\` text not null, \`pod_sets\` json not null, \`expected_duration_ms\` bigint null, \`max_run_ms\` bigint null, \`workload\` json null, \`state\` text check (\`state\` in ('PENDING', 'ADMITTED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')) not null default 'PENDING', \`admission\` json null, \`idempotency_key\` text null, \`request_hash\` text not null, \`submit_time\` bigint not null, \`gpus_requested\` double not null default 0, \`preemption_count\` integer not null default 0, \`exit_reason\` text null, \`submitted_at\` datetime not null, \`admitted_at\` datetime null, \`started_at\` datetime null, \`finished_at\` datetime null, \`updated_at\` datetime not null, constraint \`jobs_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, constraint \`jobs_project_id_foreign\` foreign key(\`project_id\`) references \`projects\`(\`id\`) on delete set null on update cascade, constraint \`jobs_queue_id_foreign\` foreign key(\`queue_id\`) references \`queues\`(\`id\`) on update cascade, constraint \`jobs_submitted_by_id_foreign\` foreign key(\`submitted_by_id\`) references \`users\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`jobs_tenant_id_index\` on \`jobs\` (\`tenant_id\`);`);
    this.addSql(`create index \`jobs_project_id_index\` on \`jobs\` (\`project_id\`);`);
    this.addSql(`create index \`jobs_queue_id_index\` on \`jobs\` (\`queue_id\`);`);
    this.addSql(`create index \`jobs_submitted_by_id_index\` on \`jobs\` (\`submitted_by_id\`);`);
    this.addSql(`create index \`jobs_tenant_id_state_index\` on \`jobs\` (\`tenant_id\`, \`state\`);`);
    this.addSql(`create index \`jobs_queue_id_state_index\` on \`jobs\` (\`queue_id\`, \`state\`);`);
    this.addSql(`create index \`jobs_state_index\` on \`jobs\` (\`state\`);`);
    this.addSql(`create unique index \`jobs_tenant_id_idempotency_key_unique\` on \`jobs\` (\`tenant_id\`, \`idempotency_key\`);`);

    this.addSql(`create table \`job_events\` (\`id\` text not null, \`job_id\` text not null, \`tenant_id\` text not null, \`type\` text check (\`type\` in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED')) not null, \`reason\` text null, \`message\` text null, \`data\` json null, \`at\` datetime not null, constraint \`job_events_job_id_foreign\` foreign key(\`job_id\`) references \`jobs\`(\`id\`) on delete cascade on update cascade, constraint \`job_events_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`job_events_job_id_index\` on \`job_events\` (\`job_id\`);`);
    this.addSql(`create index \`job_events_tenant_id_index\` on \`job_events\` (\`tenant_id\`);`);
    this.addSql(`create index \`job_events_job_id_id_index\` on \`job_events\` (\`job_id\`, \`id\`);`);

    this.addSql(`alter table \`projects\` add column \`default_queue_id\` text null;`);
  }

}
