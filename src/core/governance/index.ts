export { controllerStep, replayAdjustment, slaAttainment } from './controller.js';
export { flagJob } from './idle.js';
export * from './job-flags.js';
export * from './library.js';
export * from './policies.js';
export { type RecommendationOptions, recommend } from './recommendations.js';
export * from './types.js';
export {
  meanUtilization,
  type UtilizationProfile,
  utilizationAt,
  utilizationProfile,
} from './utilization-model.js';
