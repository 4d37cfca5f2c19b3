import { Migration } from '@mikro-orm/migrations';

export class Migration20261201194920 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "governance_settings" ("key" varchar(63) not null, "value" jsonb not null, "updated_at" timestamptz not null, constraint "governance_settings_pkey" primary key ("key"));`);

    this.addSql(`create table "isolation_policies" ("id" uuid not null, "name" varchar(63) not null, "description" varchar(400) not null, "level" varchar(16) not null, "coefficients" jsonb not null, "built_in" boolean not null default false, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "isolation_policies_pkey" primary key ("id"));`);
    this.addSql(`alter table "isolation_policies" add constraint "isolation_policies_name_unique" unique ("name");`);

    this.addSql(`create table "isolation_policy_rules" ("id" uuid not null, "position" int not null, "tier" varchar(16) null, "workload_type" varchar(24) null, "sla_class" varchar(16) null, "policy" varchar(63) not null, constraint "isolation_policy_rules_pkey" primary key ("id"));`);

    this.addSql(`create table "quota_requests" ("id" uuid not null, "tenant_id" uuid not null, "queue_id" uuid not null, "flavor" varchar(63) not null, "resource" varchar(16) not null, "nominal" double precision not null, "previous_nominal" double precision null, "starts_at" timestamptz null, "expires_at" timestamptz null, "justification" varchar(2000) not null, "status" text check ("status" in ('PENDING', 'APPROVED', 'ACTIVE', 'EXPIRED', 'REJECTED', 'CANCELLED')) not null default 'PENDING', "requested_by_id" uuid null, "decided_by_id" uuid null, "decision_note" varchar(2000) null, "decided_at" timestamptz null, "applied_at" timestamptz null, "ended_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "quota_requests_pkey" primary key ("id"));`);
    this.addSql(`create index "quota_requests_status_index" on "quota_requests" ("status");`);
    this.addSql(`create index "quota_requests_tenant_id_id_index" on "quota_requests" ("tenant_id", "id");`);

    this.addSql(`create table "job_probe_samples" ("id" uuid not null, "job_id" uuid not null, "tenant_id" uuid not null, "at" bigint not null, "gpu_utilization" double precision not null, "memory_utilization" double precision null, constraint "job_probe_samples_pkey" primary key ("id"));`);
    this.addSql(`create index "job_probe_samples_job_id_at_index" on "job_probe_samples" ("job_id", "at");`);
    this.addSql(`create index "job_probe_samples_at_index" on "job_probe_samples" ("at");`);

    this.addSql(`alter table "quota_requests" add constraint "quota_requests_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "quota_requests" add constraint "quota_requests_queue_id_foreign" foreign key ("queue_id") references "queues" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "quota_requests" add constraint "quota_requests_requested_by_id_foreign" foreign key ("requested_by_id") references "users" ("id") on update cascade on delete set null;`);
    this.addSql(`alter table "quota_requests" add constraint "quota_requests_decided_by_id_foreign" foreign key ("decided_by_id") references "users" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "job_probe_samples" add constraint "job_probe_samples_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "job_probe_samples" add constraint "job_probe_samples_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "job_events" drop constraint if exists "job_events_type_check";`);

    this.addSql(`alter table "queues" add column "workload_type" varchar(24) null, add column "sla_class" varchar(16) null, add column "isolation_policy" varchar(63) null, add column "controller_setting" jsonb null;`);

    this.addSql(`alter table "jobs" add column "workload_type" varchar(24) null, add column "latency_sensitive" boolean not null default false, add column "probe_summary" jsonb null, add column "governance_flag" jsonb null;`);

    this.addSql(`alter table "job_events" add constraint "job_events_type_check" check("type" in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ADMITTED_NOT_RUNNING', 'FLAGGED'));`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "governance_settings" cascade;`);

    this.addSql(`drop table if exists "isolation_policies" cascade;`);

    this.addSql(`drop table if exists "isolation_policy_rules" cascade;`);

    this.addSql(`drop table if exists "quota_requests" cascade;`);

    this.addSql(`drop table if exists "job_probe_samples" cascade;`);

    this.addSql(`alter table "job_events" drop constraint if exists "job_events_type_check";`);

    this.addSql(`alter table "job_events" add constraint "job_events_type_check" check("type" in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ADMITTED_NOT_RUNNING'));`);

    this.addSql(`alter table "jobs" drop column "workload_type", drop column "latency_sensitive", drop column "probe_summary", drop column "governance_flag";`);

    this.addSql(`alter table "queues" drop column "workload_type", drop column "sla_class", drop column "isolation_policy", drop column "controller_setting";`);
  }

}
