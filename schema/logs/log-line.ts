import type { LogLine } from '../../src/services/logs/index.js';
import { builder } from '../builder.js';

export const LogStreamEnum = builder.enumType('LogStream', {
  description: 'Which output stream a line came from.',
  values: { STDOUT: { value: 'stdout' }, STDERR: { value: 'stderr' } } as const,
});

export const LogLineRef = builder.objectRef<LogLine>('LogLine').implement({
  description:
    "One line of a pod's output: cut at 16 KiB (with a marker saying how much), bytes that are not UTF-8 replaced, and the values of environment variables marked secret replaced by [secret].",
  fields: (t) => ({
    at: t.field({ type: 'DateTime', resolve: (l) => new Date(l.at) }),
    run: t.int({
      description: 'Which run of the job wrote it: 1 for the first start, +1 per readmission.',
      resolve: (l) => l.run,
    }),
    podSet: t.string({ resolve: (l) => l.podSet }),
    pod: t.int({ description: "The pod's index in its pod set (0-based).", resolve: (l) => l.pod }),
    stream: t.field({
      type: LogStreamEnum,
      nullable: true,
      description:
        'Null where the cluster does not tell the streams apart (the Kubernetes log API merges them).',
      resolve: (l) => l.stream,
    }),
    text: t.string({ resolve: (l) => l.text }),
    cursor: t.string({
      description: 'Pass as `before` to page back from this line.',
      resolve: (l) => l.cursor,
    }),
  }),
});
