export * from './inference-service.js';

import './inference-service-mutations.js';
import './inference-service-queries.js';
