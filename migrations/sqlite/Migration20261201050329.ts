import { Migration } from '@mikro-orm/migrations';

/** Kubernetes backend: a tenant's egress allowlist; nodes the scheduler must not place on. */
export class Migration20261201050329 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table \`tenants\` add column \`egress_allowlist\` json null;`);
    this.addSql(`alter table \`nodes\` add column \`unschedulable\` integer not null default false;`);
  }
}
