import { Migration } from '@mikro-orm/migrations';

export class Migration20261130100417 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "cohorts" ("id" uuid not null, "name" varchar(63) not null, "parent_id" uuid null, "quotas" jsonb not null, "created_at" timestamptz not null, constraint "cohorts_pkey" primary key ("id"));`);
    this.addSql(`alter table "cohorts" add constraint "cohorts_name_unique" unique ("name");`);

    this.addSql(`create table "flavors" ("id" uuid not null, "name" varchar(63) not null, "kind" text check ("kind" in ('gpu', 'mig', 'timeslice')) not null, "gpu_model" varchar(100) null, "slices_per_gpu" int null, "price_per_unit_hour" double precision not null default 0, "created_at" timestamptz not null, constraint "flavors_pkey" primary key ("id"));`);
    this.addSql(`alter table "flavors" add constraint "flavors_name_unique" unique ("name");`);

    this.addSql(`create table "outbox" ("id" uuid not null, "kind" varchar(32) not null, "payload" jsonb not null, "created_at" timestamptz not null, "performed_at" timestamptz null, constraint "outbox_pkey" primary key ("id"));`);
    this.addSql(`create index "outbox_performed_at_id_index" on "outbox" ("performed_at", "id");`);

    this.addSql(`create table "priority_classes" ("id" uuid not null, "name" varchar(63) not null, "value" int not null, "preemptible" text check ("preemptible" in ('yes', 'no', 'reclaim-only')) not null, "description" varchar(200) null, constraint "priority_classes_pkey" primary key ("id"));`);
    this.addSql(`alter table "priority_classes" add constraint "priority_classes_name_unique" unique ("name");`);

    this.addSql(`create table "queues" ("id" uuid not null, "name" varchar(63) not null, "tenant_id" uuid not null, "cohort_id" uuid null, "quotas" jsonb not null, "weight" double precision not null default 1, "queueing_strategy" text check ("queueing_strategy" in ('StrictFIFO', 'BestEffortFIFO')) not null default 'BestEffortFIFO', "preemption" jsonb not null, "isolation_level" varchar(16) null, "time_windows" jsonb not null, "dedicated_pool" varchar(63) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "queues_pkey" primary key ("id"));`);
    this.addSql(`alter table "queues" add constraint "queues_name_unique" unique ("name");`);

    this.addSql(`create table "node_pools" ("id" uuid not null, "name" varchar(63) not null, "dedicated_tenant_id" uuid null, "created_at" timestamptz not null, constraint "node_pools_pkey" primary key ("id"));`);
    this.addSql(`alter table "node_pools" add constraint "node_pools_name_unique" unique ("name");`);

    this.addSql(`create table "nodes" ("id" uuid not null, "name" varchar(253) not null, "pool_id" uuid not null, "flavor_id" uuid not null, "gpus" int not null, "cpu" int not null, "memory" int not null, "created_at" timestamptz not null, constraint "nodes_pkey" primary key ("id"));`);
    this.addSql(`alter table "nodes" add constraint "nodes_name_unique" unique ("name");`);

    this.addSql(`create table "jobs" ("id" uuid not null, "tenant_id" uuid not null, "project_id" uuid null, "queue_id" uuid not null, "submitted_by_id" uuid null, "name" varchar(200) not null, "priority_class" varchar(63) not null, "pod_sets" jsonb not null, "expected_duration_ms" bigint null, "max_run_ms" bigint null, "workload" jsonb null, "state" text check ("state" in ('PENDING', 'ADMITTED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')) not null default 'PENDING', "admission" jsonb null, "idempotency_key" varchar(128) null, "request_hash" varchar(64) not null, "submit_time" bigint not null, "gpus_requested" double precision not null default 0, "preemption_count" int not null default 0, "exit_reason" varchar(500) null, "submitted_at" timestamptz not null, "admitted_at" timestamptz null, "started_at" timestamptz null, "finished_at" timestamptz null, "updated_at" timestamptz not null, constraint "jobs_pkey" primary key ("id"));`);
    this.addSql(`create index "jobs_tenant_id_state_index" on "jobs" ("tenant_id", "state");`);
    this.addSql(`create index "jobs_queue_id_state_index" on "jobs" ("queue_id", "state");`);
    this.addSql(`create index "jobs_state_index" on "jobs" ("state");`);
    this.addSql(`alter table "jobs" add constraint "jobs_tenant_id_idempotency_key_unique" unique ("tenant_id", "idempotency_key");`);

    this.addSql(`create table "job_events" ("id" uuid not null, "job_id" uuid not null, "tenant_id" uuid not null, "type" text check ("type" in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED')) not null, "reason" varchar(64) null, "message" varchar(500) null, "data" jsonb null, "at" timestamptz not null, constraint "job_events_pkey" primary key ("id"));`);
    this.addSql(`create index "job_events_job_id_id_index" on "job_events" ("job_id", "id");`);

    this.addSql(`alter table "cohorts" add constraint "cohorts_parent_id_foreign" foreign key ("parent_id") references "cohorts" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "queues" add constraint "queues_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "queues" add constraint "queues_cohort_id_foreign" foreign key ("cohort_id") references "cohorts" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "node_pools" add constraint "node_pools_dedicated_tenant_id_foreign" foreign key ("dedicated_tenant_id") references "tenants" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "nodes" add constraint "nodes_pool_id_foreign" foreign key ("pool_id") references "node_pools" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "nodes" add constraint "nodes_flavor_id_foreign" foreign key ("flavor_id") references "flavors" ("id") on update cascade;`);

    this.addSql(`alter table "jobs" add constraint "jobs_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "jobs" add constraint "jobs_project_id_foreign" foreign key ("project_id") references "projects" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "jobs" add constraint "jobs_queue_id_foreign" foreign key ("queue_id") references "queues" ("id") on update cascade;`);
    this.addSql(`alter table "jobs" add constraint "jobs_submitted_by_id_foreign" foreign key ("submitted_by_id") references "users" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "job_events" add constraint "job_events_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "job_events" add constraint "job_events_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "projects" add column "default_queue_id" uuid null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "cohorts" drop constraint "cohorts_parent_id_foreign";`);

    this.addSql(`alter table "queues" drop constraint "queues_cohort_id_foreign";`);

    this.addSql(`alter table "nodes" drop constraint "nodes_flavor_id_foreign";`);

    this.addSql(`alter table "jobs" drop constraint "jobs_queue_id_foreign";`);

    this.addSql(`alter table "nodes" drop constraint "nodes_pool_id_foreign";`);

    this.addSql(`alter table "job_events" drop constraint "job_events_job_id_foreign";`);

    this.addSql(`drop table if exists "cohorts" cascade;`);

    this.addSql(`drop table if exists "flavors" cascade;`);

    this.addSql(`drop table if exists "outbox" cascade;`);

    this.addSql(`drop table if exists "priority_classes" cascade;`);

    this.addSql(`drop table if exists "queues" cascade;`);

    this.addSql(`drop table if exists "node_pools" cascade;`);

    this.addSql(`drop table if exists "nodes" cascade;`);

    this.addSql(`drop table if exists "jobs" cascade;`);

    this.addSql(`drop table if exists "job_events" cascade;`);

    this.addSql(`alter table "projects" drop column "default_queue_id";`);
  }

}
