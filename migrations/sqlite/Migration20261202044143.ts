import { Migration } from '@mikro-orm/migrations';

export class Migration20261202044143 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table \`jobs\` add column \`workload_kind\` text check (\`workload_kind\` in ('BATCH', 'JOBSET', 'PYTORCH_JOB', 'RAY_JOB', 'RAY_CLUSTER')) not null default 'BATCH';`);
  }

}
