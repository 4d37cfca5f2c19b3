import { Migration } from '@mikro-orm/migrations';

export class Migration20261202070535 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`pod_log_archives\` (\`id\` text not null, \`job_id\` text not null, \`tenant_id\` text not null, \`admission_at\` bigint not null, \`pod_set\` text not null, \`pod_index\` integer not null, \`lines\` json not null, \`truncated\` integer not null default false, \`bytes\` integer not null, \`ended_at\` bigint not null, \`archived_at\` datetime not null, constraint \`pod_log_archives_job_id_foreign\` foreign key(\`job_id\`) references \`jobs\`(\`id\`) on delete cascade on update cascade, constraint \`pod_log_archives_tenant_id_foreign\` foreign key(\`tenant_id\`) references \`tenants\`(\`id\`) on delete cascade on update cascade, primary key (\`id\`));`);
    this.addSql(`create index \`pod_log_archives_job_id_index\` on \`pod_log_archives\` (\`job_id\`);`);
    this.addSql(`create index \`pod_log_archives_tenant_id_index\` on \`pod_log_archives\` (\`tenant_id\`);`);
    this.addSql(`create index \`pod_log_archives_ended_at_index\` on \`pod_log_archives\` (\`ended_at\`);`);
    this.addSql(`create unique index \`pod_log_archives_job_id_admission_at_pod_set_pod_index_unique\` on \`pod_log_archives\` (\`job_id\`, \`admission_at\`, \`pod_set\`, \`pod_index\`);`);

  }

}
