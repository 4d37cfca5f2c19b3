import { Migration } from '@mikro-orm/migrations';

export class Migration20261201170420 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`jobs\` add column \`checkpoint_interval_ms\` bigint null;`);
    this.addSql(`alter table \`jobs\` add column \`checkpoint_resumable\` integer not null default false;`);
  }

}
