import { flag, section } from '../section.js';

/** How GraphQL operations are executed (plugins/useGraphqlJit.ts, wired in src/server/app.ts). */
export interface ExecutionConfig {
  /** Queries and mutations run as compiled JavaScript (graphql-jit) once their document repeats. */
  jit: boolean;
}

export const executionSection = section({
  key: 'execution',
  title: 'GraphQL execution',
  description:
    'How operations run once parsed and validated (both cached per query text). Subscriptions always run on the standard executor.',
  variables: {
    FAIRWAY_GRAPHQL_JIT: flag(
      'Run queries and mutations compiled to JavaScript (graphql-jit) from the second time their text is seen; `false`: the standard graphql-js executor for everything. Documents with more than one operation always run on the standard executor.',
      true,
    ),
  },
  resolve: (v): ExecutionConfig => ({ jit: v.FAIRWAY_GRAPHQL_JIT }),
});
