import { Migration } from '@mikro-orm/migrations';

export class Migration20261202180712 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`inference_services\` (\`id\` text not null, \`tenant_id\` text not null, \`project_id\` text not null, \`queue_id\` text not null, \`created_by_id\` text null, \`name\` text not null, \`container\` json not null, \`port\` integer not null, \`replica\` json not null, \`min_replicas\` integer not null, \`max_replicas\` integer not null, \`minimum_windows\` json not null, \`scaling\` json not null, \`latency_objective_ms\` double null, \`max_surge\` integer not null default 1, \`guaranteed_class\` text not null, \`burst_class\` text not null, \`revision\` integer not null default 1, \`desired_replicas\` integer not null, \`memory\` json not null, \`last_decision\` json null, \`traffic\` json null, \`state\` text check (\`state\` in ('ACTIVE', 'DELETING')) not null default 'ACTIVE', \`created_at\` datetime not null, \`updated_at\` datetime not null, constraint \`inference_services_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, constraint \`inference_services_project_id_foreign\` foreign key(\`project_id\`) references \`projects\`(\`id\`) on delete cascade on update cascade, constraint \`inference_services_queue_id_foreign\` foreign key(\`queue_id\`) references \`queues\`(\`id\`) on update cascade, constraint \`inference_services_created_by_id_foreign\` foreign key(\`created_by_id\`) references \`users\`(\`id\`) on delete set null on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`inference_services_tenant_id_index\` on \`inference_services\` (\`tenant_id\`);`);
    this.addSql(`create index \`inference_services_project_id_index\` on \`inference_services\` (\`project_id\`);`);
    this.addSql(`create index \`inference_services_queue_id_index\` on \`inference_services\` (\`queue_id\`);`);
    this.addSql(`create index \`inference_services_created_by_id_index\` on \`inference_services\` (\`created_by_id\`);`);
    this.addSql(`create index \`inference_services_state_index\` on \`inference_services\` (\`state\`);`);
    this.addSql(`create index \`inference_services_tenant_id_id_index\` on \`inference_services\` (\`tenant_id\`, \`id\`);`);
    this.addSql(`create unique index \`inference_services_tenant_id_name_unique\` on \`inference_services\` (\`tenant_id\`, \`name\`);`);

    this.addSql(`create table \`service_scaling_events\` (\`id\` text not null, \`service_id\` text not null, \`tenant_id\` text not null, \`at\` datetime not null, \`signal\` text not null, \`signal_value\` double null, \`target\` double not null, \`recommended\` integer not null, \`minimum\` integer not null, \`from_replicas\` integer not null, \`desired\` integer not null, \`admitted\` integer not null, \`ready\` integer not null, \`reason\` text not null, \`why_not_more\` text null, \`cold_start\` integer not null default false, constraint \`service_scaling_events_service_id_foreign\` foreign key(\`service_id\`) references \`inference_services\`(\`id\`) on delete cascade on update cascade, constraint \`service_scaling_events_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`service_scaling_events_service_id_index\` on \`service_scaling_events\` (\`service_id\`);`);
    this.addSql(`create index \`service_scaling_events_tenant_id_index\` on \`service_scaling_events\` (\`tenant_id\`);`);
    this.addSql(`create index \`service_scaling_events_service_id_id_index\` on \`service_scaling_events\` (\`service_id\`, \`id\`);`);

    this.addSql(`create table \`service_load_windows\` (\`id\` text not null, \`service_id\` text not null, \`tenant_id\` text not null, \`window_start\` datetime not null, \`readings\` integer not null default 0, \`within_objective\` integer not null default 0, \`requests\` double not null default 0, \`max_p95ms\` double not null default 0, \`sum_p95ms\` double not null default 0, \`replica_readings\` integer not null default 0, constraint \`service_load_windows_service_id_foreign\` foreign key(\`service_id\`) references \`inference_services\`(\`id\`) on delete cascade on update cascade, constraint \`service_load_windows_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`service_load_windows_service_id_index\` on \`service_load_windows\` (\`service_id\`);`);
    this.addSql(`create index \`service_load_windows_tenant_id_index\` on \`service_load_windows\` (\`tenant_id\`);`);
    this.addSql(`create unique index \`service_load_windows_service_id_window_start_unique\` on \`service_load_windows\` (\`service_id\`, \`window_start\`);`);


    this.addSql(`alter table \`jobs\` add column \`service_id\` text null constraint \`jobs_service_id_foreign\` references \`inference_services\` (\`id\`) on update cascade on delete set null;`);
    this.addSql(`alter table \`jobs\` add column \`replica_slot\` integer null;`);
    this.addSql(`alter table \`jobs\` add column \`service_revision\` integer null;`);
    this.addSql(`create index \`jobs_service_id_index\` on \`jobs\` (\`service_id\`);`);
    this.addSql(`create index \`jobs_service_id_state_index\` on \`jobs\` (\`service_id\`, \`state\`);`);
  }

}
