export * from './types.js';
export * from './policies.js';
export { controllerStep, replayAdjustment, slaAttainment } from './controller.js';
export { flagJob } from './idle.js';
export { recommend, type RecommendationOptions } from './recommendations.js';
export { utilizationProfile, utilizationAt, meanUtilization, type UtilizationProfile } from './utilization-model.js';
export * from './library.js';
export * from './job-flags.js';
