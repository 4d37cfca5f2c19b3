import { Migration } from '@mikro-orm/migrations';

export class Migration20261201154223 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index "jobs_tenant_id_id_index" on "jobs" ("tenant_id", "id");`);
    this.addSql(`create index "jobs_queue_id_id_index" on "jobs" ("queue_id", "id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "jobs_tenant_id_id_index";`);
    this.addSql(`drop index "jobs_queue_id_id_index";`);
  }

}
