// Importing each feature's types registers them on the builder; this file only imports.
import './common.js';
import './refs.js';
import './tenancy/index.js';
import './audit/index.js';
import './cluster/index.js';
import './governance/index.js';
import './jobs/index.js';
import './events/index.js';
import './metering/index.js';
import './logs/index.js';
import './inference/index.js';
import { builder } from './builder.js';

export const schema = builder.toSchema({ sortSchema: true });
