import { Migration } from '@mikro-orm/migrations';

/** Kubernetes backend: a tenant's egress allowlist; nodes the scheduler must not place on. */
export class Migration20261201050332 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "tenants" add column "egress_allowlist" jsonb null;`);
    this.addSql(`alter table "nodes" add column "unschedulable" boolean not null default false;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "nodes" drop column "unschedulable";`);
    this.addSql(`alter table "tenants" drop column "egress_allowlist";`);
  }
}
