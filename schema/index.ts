// Importing each type file registers it on the builder; this file only imports.
import './common.js';
import './refs.js';
import './tenant.js';
import './project.js';
import './member.js';
import './api-token.js';
import './audit-event.js';
import './viewer.js';
import './node.js';
import './subscription.js';
import './quota.js';
import './cluster.js';
import './queue.js';
import './job.js';
import { builder } from './builder.js';

export const schema = builder.toSchema({ sortSchema: true });
