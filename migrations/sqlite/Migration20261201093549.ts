import { Migration } from '@mikro-orm/migrations';

export class Migration20261201093549 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`flavor_prices\` (\`id\` text not null, \`flavor\` text not null, \`price_per_unit_hour\` double not null, \`effective_from\` datetime not null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`flavor_prices_flavor_effective_from_unique\` on \`flavor_prices\` (\`flavor\`, \`effective_from\`);`);

    this.addSql(`create table \`price_multipliers\` (\`id\` text not null, \`priority_class\` text not null, \`multiplier\` double not null, \`effective_from\` datetime not null, \`created_at\` datetime not null, primary key (\`id\`));`);
    this.addSql(`create unique index \`price_multipliers_priority_class_effective_from_unique\` on \`price_multipliers\` (\`priority_class\`, \`effective_from\`);`);

    this.addSql(`create table \`budgets\` (\`id\` text not null, \`tenant_id\` text not null, \`project_id\` text null, \`scope_key\` text not null, \`monthly_amount\` double not null, \`thresholds\` json not null, \`hard\` integer not null default false, \`exempt_priority_classes\` json not null, \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`budgets_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, constraint \`budgets_project_id_foreign\` foreign key(\`project_id\`) references \`projects\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`budgets_tenant_id_index\` on \`budgets\` (\`tenant_id\`);`);
    this.addSql(`create index \`budgets_project_id_index\` on \`budgets\` (\`project_id\`);`);
    this.addSql(`create unique index \`budgets_tenant_id_scope_key_unique\` on \`budgets\` (\`tenant_id\`, \`scope_key\`);`);

    this.addSql(`create table \`budget_alerts\` (\`id\` text not null, \`budget_id\` text not null, \`tenant_id\` text not null, \`period\` text not null, \`threshold\` integer not null, \`spent\` double not null, \`limit_amount\` double not null, \`at\` datetime not null, constraint \`budget_alerts_budget_id_foreign\` foreign key(\`budget_id\`) references \`budgets\`(\`id\`) on delete cascade on update cascade, constraint \`budget_alerts_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`budget_alerts_budget_id_index\` on \`budget_alerts\` (\`budget_id\`);`);
    this.addSql(`create index \`budget_alerts_tenant_id_index\` on \`budget_alerts\` (\`tenant_id\`);`);
    this.addSql(`create unique index \`budget_alerts_budget_id_period_threshold_unique\` on \`budget_alerts\` (\`budget_id\`, \`period\`, \`threshold\`);`);

    this.addSql(`create table \`usage_hourly\` (\`id\` text not null, \`hour\` datetime not null, \`tenant_id\` text not null, \`project_id\` text not null, \`queue_id\` text not null, \`user_id\` text not null, \`priority_class\` text not null, \`flavor\` text not null, \`gpu_seconds\` double not null, \`used_gpu_seconds\` double not null, \`measured_gpu_seconds\` double not null, \`cpu_seconds\` double not null, \`memory_gib_seconds\` double not null, \`cost\` double not null, \`jobs\` integer not null, constraint \`usage_hourly_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`usage_hourly_tenant_id_index\` on \`usage_hourly\` (\`tenant_id\`);`);
    this.addSql(`create unique index \`usage_hourly_hour_tenant_id_project_id_queue_id_user_id_priority_class_flavor_unique\` on \`usage_hourly\` (\`hour\`, \`tenant_id\`, \`project_id\`, \`queue_id\`, \`user_id\`, \`priority_class\`, \`flavor\`);`);

    this.addSql(`create table \`usage_records\` (\`id\` text not null, \`job_id\` text not null, \`tenant_id\` text not null, \`project_id\` text null, \`queue_id\` text not null, \`user_id\` text null, \`priority_class\` text not null, \`flavor\` text not null, \`started_at\` datetime not null, \`ended_at\` datetime not null, \`duration_ms\` bigint not null, \`gpu_units\` double not null, \`gpu_seconds\` double not null, \`cpu_seconds\` double not null, \`memory_gib_seconds\` double not null, \`used_gpu_seconds\` double null, \`unit_price_per_hour\` double not null, \`cost\` double not null, \`closed_by\` text check (\`closed_by\` in ('checkpoint', 'preempted', 'succeeded', 'failed', 'cancelled', 'requeued')) not null, \`first_of_job\` integer not null default false, constraint \`usage_records_job_id_foreign\` foreign key(\`job_id\`) references \`jobs\`(\`id\`) on delete cascade on update cascade, constraint \`usage_records_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`usage_records_job_id_index\` on \`usage_records\` (\`job_id\`);`);
    this.addSql(`create index \`usage_records_tenant_id_index\` on \`usage_records\` (\`tenant_id\`);`);
    this.addSql(`create index \`usage_records_tenant_id_started_at_index\` on \`usage_records\` (\`tenant_id\`, \`started_at\`);`);
    this.addSql(`create unique index \`usage_records_job_id_flavor_started_at_unique\` on \`usage_records\` (\`job_id\`, \`flavor\`, \`started_at\`);`);

    this.addSql(`alter table \`jobs\` add column \`metered_from\` bigint null;`);
    this.addSql(`create index \`usage_hourly_tenant_id_hour_index\` on \`usage_hourly\` (\`tenant_id\`, \`hour\`);`);
  }

}
