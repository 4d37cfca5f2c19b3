import { containerOf, ENFORCED_SECURITY, type JobContainer } from '../../src/services/jobs/index.js';
import { SECRET_MASK } from '../../src/services/logs/index.js';
import { mayReadContent } from '../../src/services/tenancy/index.js';
import { forbidden } from '../../src/shared/index.js';
import { builder } from '../builder.js';
import { JobRef } from '../refs.js';

type EnvVar = JobContainer['env'][number];
type DatasetMount = JobContainer['datasets'][number];

const EnvVarRef = builder.objectRef<EnvVar>('EnvVar').implement({
  fields: (t) => ({
    name: t.exposeString('name'),
    value: t.string({
      description: 'The value; `[secret]` for a secret.',
      resolve: (e) => (e.secret ? SECRET_MASK : e.value),
    }),
    secret: t.boolean({ resolve: (e) => e.secret === true }),
  }),
});

const DatasetMountRef = builder.objectRef<DatasetMount>('DatasetMount').implement({
  fields: (t) => ({
    location: t.exposeString('location'),
    mountPath: t.exposeString('mountPath'),
    readOnly: t.exposeBoolean('readOnly'),
  }),
});

const ContainerSecurityRef = builder
  .objectRef<NonNullable<JobContainer['securityContext']>>('ContainerSecurity')
  .implement({
    description: `The user and group the container asked for; nothing else is kept. ${ENFORCED_SECURITY}.`,
    fields: (t) => ({
      runAsUser: t.int({ nullable: true, resolve: (s) => s.runAsUser ?? null }),
      runAsGroup: t.int({ nullable: true, resolve: (s) => s.runAsGroup ?? null }),
    }),
  });

const ContainerSpecRef = builder.objectRef<JobContainer>('ContainerSpec').implement({
  description: 'What a job runs: its image, command, environment and data.',
  fields: (t) => ({
    image: t.exposeString('image'),
    command: t.exposeStringList('command'),
    args: t.exposeStringList('args'),
    env: t.field({ type: [EnvVarRef], resolve: (c) => c.env }),
    datasets: t.field({ type: [DatasetMountRef], resolve: (c) => c.datasets }),
    artifactStore: t.string({ nullable: true, resolve: (c) => c.artifactStore ?? null }),
    securityContext: t.field({
      type: ContainerSecurityRef,
      nullable: true,
      description: 'Null when the submit chose neither user nor group.',
      resolve: (c) => c.securityContext ?? null,
    }),
  }),
});

builder.objectFields(JobRef, (t) => ({
  container: t.field({
    type: ContainerSpecRef,
    nullable: true,
    description:
      "The job's content. Readable by its submitter, the project's admins, tenant admins and (per the project's job visibility and the tenant's projectsOpen) the project's members; platform admins only under a break-glass grant. Null when the job has no container.",
    resolve: async (job, _args, ctx) => {
      // Checked whether or not there is a container: the answer says nothing to those who may not read it.
      if (!(await mayReadContent(ctx, job)))
        throw forbidden("You may not read this job's content (container, environment, data paths).");
      return containerOf(job.workload);
    },
  }),
}));
