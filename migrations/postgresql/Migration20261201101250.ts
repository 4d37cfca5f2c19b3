import { Migration } from '@mikro-orm/migrations';

export class Migration20261201101250 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create index "jobs_tenant_id_finished_at_index" on "jobs" ("tenant_id", "finished_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "jobs_tenant_id_finished_at_index";`);
  }

}
