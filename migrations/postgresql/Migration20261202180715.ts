import { Migration } from '@mikro-orm/migrations';

export class Migration20261202180715 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "inference_services" ("id" uuid not null, "tenant_id" uuid not null, "project_id" uuid not null, "queue_id" uuid not null, "created_by_id" uuid null, "name" varchar(63) not null, "container" jsonb not null, "port" int not null, "replica" jsonb not null, "min_replicas" int not null, "max_replicas" int not null, "minimum_windows" jsonb not null, "scaling" jsonb not null, "latency_objective_ms" double precision null, "max_surge" int not null default 1, "guaranteed_class" varchar(63) not null, "burst_class" varchar(63) not null, "revision" int not null default 1, "desired_replicas" int not null, "memory" jsonb not null, "last_decision" jsonb null, "traffic" jsonb null, "state" text check ("state" in ('ACTIVE', 'DELETING')) not null default 'ACTIVE', "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "inference_services_pkey" primary key ("id"));`);
    this.addSql(`create index "inference_services_state_index" on "inference_services" ("state");`);
    this.addSql(`create index "inference_services_tenant_id_id_index" on "inference_services" ("tenant_id", "id");`);
    this.addSql(`alter table "inference_services" add constraint "inference_services_tenant_id_name_unique" unique ("tenant_id", "name");`);

    this.addSql(`create table "service_scaling_events" ("id" uuid not null, "service_id" uuid not null, "tenant_id" uuid not null, "at" timestamptz not null, "signal" varchar(24) not null, "signal_value" double precision null, "target" double precision not null, "recommended" int not null, "minimum" int not null, "from_replicas" int not null, "desired" int not null, "admitted" int not null, "ready" int not null, "reason" varchar(500) not null, "why_not_more" varchar(500) null, "cold_start" boolean not null default false, constraint "service_scaling_events_pkey" primary key ("id"));`);
    this.addSql(`create index "service_scaling_events_service_id_id_index" on "service_scaling_events" ("service_id", "id");`);

    this.addSql(`create table "service_load_windows" ("id" uuid not null, "service_id" uuid not null, "tenant_id" uuid not null, "window_start" timestamptz not null, "readings" int not null default 0, "within_objective" int not null default 0, "requests" double precision not null default 0, "max_p95ms" double precision not null default 0, "sum_p95ms" double precision not null default 0, "replica_readings" int not null default 0, constraint "service_load_windows_pkey" primary key ("id"));`);
    this.addSql(`alter table "service_load_windows" add constraint "service_load_windows_service_id_window_start_unique" unique ("service_id", "window_start");`);

    this.addSql(`alter table "inference_services" add constraint "inference_services_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "inference_services" add constraint "inference_services_project_id_foreign" foreign key ("project_id") references "projects" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "inference_services" add constraint "inference_services_queue_id_foreign" foreign key ("queue_id") references "queues" ("id") on update cascade;`);
    this.addSql(`alter table "inference_services" add constraint "inference_services_created_by_id_foreign" foreign key ("created_by_id") references "users" ("id") on update cascade on delete set null;`);

    this.addSql(`alter table "service_scaling_events" add constraint "service_scaling_events_service_id_foreign" foreign key ("service_id") references "inference_services" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "service_scaling_events" add constraint "service_scaling_events_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "service_load_windows" add constraint "service_load_windows_service_id_foreign" foreign key ("service_id") references "inference_services" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "service_load_windows" add constraint "service_load_windows_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "jobs" add column "service_id" uuid null, add column "replica_slot" int null, add column "service_revision" int null;`);
    this.addSql(`alter table "jobs" add constraint "jobs_service_id_foreign" foreign key ("service_id") references "inference_services" ("id") on update cascade on delete set null;`);
    this.addSql(`create index "jobs_service_id_state_index" on "jobs" ("service_id", "state");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "service_scaling_events" drop constraint "service_scaling_events_service_id_foreign";`);

    this.addSql(`alter table "service_load_windows" drop constraint "service_load_windows_service_id_foreign";`);

    this.addSql(`alter table "jobs" drop constraint "jobs_service_id_foreign";`);

    this.addSql(`drop table if exists "inference_services" cascade;`);

    this.addSql(`drop table if exists "service_scaling_events" cascade;`);

    this.addSql(`drop table if exists "service_load_windows" cascade;`);

    this.addSql(`drop index "jobs_service_id_state_index";`);
    this.addSql(`alter table "jobs" drop column "service_id", drop column "replica_slot", drop column "service_revision";`);
  }

}
