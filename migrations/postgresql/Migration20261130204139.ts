import { Migration } from '@mikro-orm/migrations';

/** The name a tenant admin typed when adding a person, shown in that tenant until they accept. */
export class Migration20261130204139 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "memberships" add column "invited_name" varchar(200) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "memberships" drop column "invited_name";`);
  }

}
