import { Migration } from '@mikro-orm/migrations';

export class Migration20261201093550 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "flavor_prices" ("id" uuid not null, "flavor" varchar(63) not null, "price_per_unit_hour" double precision not null, "effective_from" timestamptz not null, "created_at" timestamptz not null, constraint "flavor_prices_pkey" primary key ("id"));`);
    this.addSql(`alter table "flavor_prices" add constraint "flavor_prices_flavor_effective_from_unique" unique ("flavor", "effective_from");`);

    this.addSql(`create table "price_multipliers" ("id" uuid not null, "priority_class" varchar(63) not null, "multiplier" double precision not null, "effective_from" timestamptz not null, "created_at" timestamptz not null, constraint "price_multipliers_pkey" primary key ("id"));`);
    this.addSql(`alter table "price_multipliers" add constraint "price_multipliers_priority_class_effective_from_unique" unique ("priority_class", "effective_from");`);

    this.addSql(`create table "budgets" ("id" uuid not null, "tenant_id" uuid not null, "project_id" uuid null, "scope_key" varchar(36) not null, "monthly_amount" double precision not null, "thresholds" jsonb not null, "hard" boolean not null default false, "exempt_priority_classes" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, constraint "budgets_pkey" primary key ("id"));`);
    this.addSql(`alter table "budgets" add constraint "budgets_tenant_id_scope_key_unique" unique ("tenant_id", "scope_key");`);

    this.addSql(`create table "budget_alerts" ("id" uuid not null, "budget_id" uuid not null, "tenant_id" uuid not null, "period" varchar(7) not null, "threshold" int not null, "spent" double precision not null, "limit_amount" double precision not null, "at" timestamptz not null, constraint "budget_alerts_pkey" primary key ("id"));`);
    this.addSql(`alter table "budget_alerts" add constraint "budget_alerts_budget_id_period_threshold_unique" unique ("budget_id", "period", "threshold");`);

    this.addSql(`create table "usage_hourly" ("id" uuid not null, "hour" timestamptz not null, "tenant_id" uuid not null, "project_id" varchar(36) not null, "queue_id" varchar(36) not null, "user_id" varchar(36) not null, "priority_class" varchar(63) not null, "flavor" varchar(63) not null, "gpu_seconds" double precision not null, "used_gpu_seconds" double precision not null, "measured_gpu_seconds" double precision not null, "cpu_seconds" double precision not null, "memory_gib_seconds" double precision not null, "cost" double precision not null, "jobs" int not null, constraint "usage_hourly_pkey" primary key ("id"));`);
    this.addSql(`alter table "usage_hourly" add constraint "usage_hourly_hour_tenant_id_project_id_queue_id_u_73270_unique" unique ("hour", "tenant_id", "project_id", "queue_id", "user_id", "priority_class", "flavor");`);

    this.addSql(`create table "usage_records" ("id" uuid not null, "job_id" uuid not null, "tenant_id" uuid not null, "project_id" varchar(36) null, "queue_id" varchar(36) not null, "user_id" varchar(36) null, "priority_class" varchar(63) not null, "flavor" varchar(63) not null, "started_at" timestamptz not null, "ended_at" timestamptz not null, "duration_ms" bigint not null, "gpu_units" double precision not null, "gpu_seconds" double precision not null, "cpu_seconds" double precision not null, "memory_gib_seconds" double precision not null, "used_gpu_seconds" double precision null, "unit_price_per_hour" double precision not null, "cost" double precision not null, "closed_by" text check ("closed_by" in ('checkpoint', 'preempted', 'succeeded', 'failed', 'cancelled', 'requeued')) not null, "first_of_job" boolean not null default false, constraint "usage_records_pkey" primary key ("id"));`);
    this.addSql(`create index "usage_records_tenant_id_started_at_index" on "usage_records" ("tenant_id", "started_at");`);
    this.addSql(`alter table "usage_records" add constraint "usage_records_job_id_flavor_started_at_unique" unique ("job_id", "flavor", "started_at");`);

    this.addSql(`alter table "budgets" add constraint "budgets_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "budgets" add constraint "budgets_project_id_foreign" foreign key ("project_id") references "projects" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "budget_alerts" add constraint "budget_alerts_budget_id_foreign" foreign key ("budget_id") references "budgets" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "budget_alerts" add constraint "budget_alerts_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "usage_hourly" add constraint "usage_hourly_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "usage_records" add constraint "usage_records_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "usage_records" add constraint "usage_records_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);

    this.addSql(`alter table "jobs" add column "metered_from" bigint null;`);
    this.addSql(`create index "usage_hourly_tenant_id_hour_index" on "usage_hourly" ("tenant_id", "hour");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "budget_alerts" drop constraint "budget_alerts_budget_id_foreign";`);

    this.addSql(`drop table if exists "flavor_prices" cascade;`);

    this.addSql(`drop table if exists "price_multipliers" cascade;`);

    this.addSql(`drop table if exists "budgets" cascade;`);

    this.addSql(`drop table if exists "budget_alerts" cascade;`);

    this.addSql(`drop table if exists "usage_hourly" cascade;`);

    this.addSql(`drop table if exists "usage_records" cascade;`);

    this.addSql(`alter table "jobs" drop column "metered_from";`);
  }

}
