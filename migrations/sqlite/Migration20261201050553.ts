import { Migration } from '@mikro-orm/migrations';

/** Kubernetes backend: a tenant's egress allowlist, unschedulable (cordoned) nodes, the ADMITTED_NOT_RUNNING job event. */
export class Migration20261201050553 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table \`tenants\` add column \`egress_allowlist\` json null;`);
    this.addSql(`alter table \`nodes\` add column \`unschedulable\` integer not null default false;`);
    // SQLite cannot change a check constraint: the table is rebuilt with the new event type.
    this.addSql(`pragma foreign_keys = off;`);
    this.addSql(`create table \`job_events__temp_alter\` (\`id\` text not null, \`job_id\` text not null, \`tenant_id\` text not null, \`type\` text check (\`type\` in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ADMITTED_NOT_RUNNING')) not null, \`reason\` text null, \`message\` text null, \`data\` json null, \`at\` datetime not null, constraint \`job_events_job_id_foreign\` foreign key(\`job_id\`) references \`jobs\`(\`id\`) on delete cascade on update cascade, constraint \`job_events_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`insert into \`job_events__temp_alter\` select \`id\`, \`job_id\`, \`tenant_id\`, \`type\`, \`reason\`, \`message\`, \`data\`, \`at\` from \`job_events\`;`);
    this.addSql(`drop table \`job_events\`;`);
    this.addSql(`alter table \`job_events__temp_alter\` rename to \`job_events\`;`);
    this.addSql(`create index \`job_events_job_id_index\` on \`job_events\` (\`job_id\`);`);
    this.addSql(`create index \`job_events_tenant_id_index\` on \`job_events\` (\`tenant_id\`);`);
    this.addSql(`create index \`job_events_job_id_id_index\` on \`job_events\` (\`job_id\`, \`id\`);`);
    this.addSql(`pragma foreign_keys = on;`);
  }
}
