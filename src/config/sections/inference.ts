import { millis, section } from '../section.js';

/** How often the leader reads every inference service's signal and decides its replicas. */
export const DEFAULT_INFERENCE_INTERVAL_MS = 15_000;

export interface InferenceConfig {
  intervalMs: number;
}

export const inferenceSection = section({
  key: 'inference',
  title: 'Inference services',
  description:
    "The leader's autoscaler: how often it reads each service's signal and asks the scheduler for replicas.",
  variables: {
    FAIRWAY_INFERENCE_INTERVAL_MS: millis(100, 600_000)
      .default(DEFAULT_INFERENCE_INTERVAL_MS)
      .describe(
        "Milliseconds between the autoscaler's decisions (the HorizontalPodAutoscaler's sync period is 15 s); stabilization windows count in these readings.",
      ),
  },
  resolve: (v): InferenceConfig => ({ intervalMs: v.FAIRWAY_INFERENCE_INTERVAL_MS }),
});
