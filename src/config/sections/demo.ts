import { type NodeEnv, optionalFlag, section } from '../section.js';

export interface DemoConfig {
  /** Seed the demo on an empty database and print its tokens. */
  enabled: boolean;
  /** Keep submitting small demo jobs so queues move (with the demo only). */
  trickle: boolean;
}

/** FAIRWAY_DEMO's default: on outside production (the other sections see the result as `ctx.demo`). */
export const demoEnabled = (set: boolean | undefined, nodeEnv: NodeEnv): boolean =>
  set ?? nodeEnv !== 'production';

export const demoSection = section({
  key: 'demo',
  title: 'Demo',
  description:
    'Outside production a first run shows something: demo tenants, queues, jobs and printed API tokens. A real installation starts empty; `npm run bootstrap` makes its first admin.',
  variables: {
    FAIRWAY_DEMO: optionalFlag(
      'Seed the demo on an empty database and print its tokens (production: use `npm run bootstrap`).',
      '`true` unless `NODE_ENV=production`',
    ),
    FAIRWAY_DEMO_TRICKLE: optionalFlag(
      'Keep submitting small demo jobs so queues move (with the demo only).',
      '`true` unless `NODE_ENV=production`',
    ),
  },
  resolve: (v, ctx): DemoConfig => ({
    enabled: demoEnabled(v.FAIRWAY_DEMO, ctx.nodeEnv),
    trickle: v.FAIRWAY_DEMO_TRICKLE ?? ctx.nodeEnv !== 'production',
  }),
});
