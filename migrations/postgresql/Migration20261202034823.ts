import { Migration } from '@mikro-orm/migrations';

export class Migration20261202034823 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "usage_records" drop constraint if exists "usage_records_closed_by_check";`);

    this.addSql(`alter table "job_events" drop constraint if exists "job_events_type_check";`);

    this.addSql(`alter table "jobs" add column "max_retries" int not null default 0, add column "disruption_count" int not null default 0, add column "stopping_since" bigint null, add column "stopping_until" bigint null, add column "stopping_admission" jsonb null;`);
    this.addSql(`create index "jobs_stopping_until_index" on "jobs" ("stopping_until");`);

    this.addSql(`alter table "usage_records" add constraint "usage_records_closed_by_check" check("closed_by" in ('checkpoint', 'preempted', 'disrupted', 'grace', 'succeeded', 'failed', 'cancelled', 'requeued'));`);

    this.addSql(`alter table "job_events" add constraint "job_events_type_check" check("type" in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ADMITTED_NOT_RUNNING', 'FLAGGED', 'DISRUPTED'));`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "job_events" drop constraint if exists "job_events_type_check";`);

    this.addSql(`alter table "usage_records" drop constraint if exists "usage_records_closed_by_check";`);

    this.addSql(`alter table "job_events" add constraint "job_events_type_check" check("type" in ('SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ADMITTED_NOT_RUNNING', 'FLAGGED'));`);

    this.addSql(`drop index "jobs_stopping_until_index";`);
    this.addSql(`alter table "jobs" drop column "max_retries", drop column "disruption_count", drop column "stopping_since", drop column "stopping_until", drop column "stopping_admission";`);

    this.addSql(`alter table "usage_records" add constraint "usage_records_closed_by_check" check("closed_by" in ('checkpoint', 'preempted', 'succeeded', 'failed', 'cancelled', 'requeued'));`);
  }

}
