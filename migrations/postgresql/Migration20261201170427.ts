import { Migration } from '@mikro-orm/migrations';

export class Migration20261201170427 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "jobs" add column "checkpoint_interval_ms" bigint null, add column "checkpoint_resumable" boolean not null default false;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "jobs" drop column "checkpoint_interval_ms", drop column "checkpoint_resumable";`);
  }

}
