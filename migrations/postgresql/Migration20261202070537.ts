import { Migration } from '@mikro-orm/migrations';

export class Migration20261202070537 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table "pod_log_archives" ("id" uuid not null, "job_id" uuid not null, "tenant_id" uuid not null, "admission_at" bigint not null, "pod_set" varchar(63) not null, "pod_index" int not null, "lines" jsonb not null, "truncated" boolean not null default false, "bytes" int not null, "ended_at" bigint not null, "archived_at" timestamptz not null, constraint "pod_log_archives_pkey" primary key ("id"));`);
    this.addSql(`create index "pod_log_archives_ended_at_index" on "pod_log_archives" ("ended_at");`);
    this.addSql(`alter table "pod_log_archives" add constraint "pod_log_archives_job_id_admission_at_pod_set_pod_index_unique" unique ("job_id", "admission_at", "pod_set", "pod_index");`);

    this.addSql(`alter table "pod_log_archives" add constraint "pod_log_archives_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on update cascade on delete cascade;`);
    this.addSql(`alter table "pod_log_archives" add constraint "pod_log_archives_tenant_id_foreign" foreign key ("tenant_id") references "tenants" ("id") on update cascade on delete cascade;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "pod_log_archives" cascade;`);
  }

}
