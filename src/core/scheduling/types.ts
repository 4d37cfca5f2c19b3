// Public data types of the scheduler core. Pure data: no classes, no I/O.
// Units at the API boundary: gpu = GPUs (or MIG slices / time-slice shares for those
// flavors), cpu = millicores, memory = MiB. Internally GPU amounts are integer milli-units.

export * from './config-types.js';
export * from './job-types.js';
export * from './view-types.js';
