import { Migration } from '@mikro-orm/migrations';

/** Kubernetes backend: a tenant's egress allowlist, unschedulable (cordoned) nodes, the ADMITTED_NOT_RUNNING job event. */
export class Migration20261201050556 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "job_events" drop constraint if exists "job_events_type_check";`);

    this.addSql(`alter table "tenants" add column "egress_allowlist" jsonb null;`);

    this.addSql(`alter table "nodes" add column "unschedulable" boolean not null default false;`);

    this.addSql(`alter table "job_events" add constraint "job_events_type_check" check("type" in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ADMITTED_NOT_RUNNING'));`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "job_events" drop constraint if exists "job_events_type_check";`);

    this.addSql(`alter table "job_events" add constraint "job_events_type_check" check("type" in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED'));`);

    this.addSql(`alter table "nodes" drop column "unschedulable";`);

    this.addSql(`alter table "tenants" drop column "egress_allowlist";`);
  }

}
