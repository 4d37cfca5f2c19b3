// Importing each type file registers it on the builder; this file only imports.
import './common.js';
import './refs.js';
import './tenant.js';
import './project.js';
import './member.js';
import './project-member.js';
import './break-glass.js';
import './api-token.js';
import './audit-event.js';
import './viewer.js';
import './node.js';
import './quota.js';
import './cluster.js';
import './queue.js';
import './pod-set.js';
import './placement.js';
import './pending-reason.js';
import './job.js';
import './job-submit.js';
import './job-container.js';
import './grant.js';
import './data-boundaries.js';
import './job-preview.js';
import './job-position.js';
import './tenant-event.js';
import { builder } from './builder.js';

export const schema = builder.toSchema({ sortSchema: true });
