import { Migration } from '@mikro-orm/migrations';

/** The scheduler leader's fencing epoch: one row, bumped on every takeover. */
export class Migration20261130201331 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`create table \`fairway_leader_epoch\` (\`id\` integer not null, \`epoch\` bigint not null, primary key (\`id\`));`);
    this.addSql(`insert into \`fairway_leader_epoch\` (\`id\`, \`epoch\`) values (1, 0);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`fairway_leader_epoch\`;`);
  }

}
