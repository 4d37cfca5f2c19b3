import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261130094927 as M0 } from './Migration20261130094927.js';
import { Migration20261130100407 as M1 } from './Migration20261130100407.js';
import { Migration20261130201331 as M2 } from './Migration20261130201331.js';
import { Migration20261130204123 as M3 } from './Migration20261130204123.js';
import { Migration20261201020820 as M4 } from './Migration20261201020820.js';
import { Migration20261201050553 as M5 } from './Migration20261201050553.js';
import { Migration20261201093549 as M6 } from './Migration20261201093549.js';
import { Migration20261201101247 as M7 } from './Migration20261201101247.js';
import { Migration20261201154222 as M8 } from './Migration20261201154222.js';
import { Migration20261201170420 as M9 } from './Migration20261201170420.js';
import { Migration20261201194917 as M10 } from './Migration20261201194917.js';
import { Migration20261202034821 as M11 } from './Migration20261202034821.js';
import { Migration20261202044143 as M12 } from './Migration20261202044143.js';
import { Migration20261202070535 as M13 } from './Migration20261202070535.js';
import { Migration20261202180712 as M14 } from './Migration20261202180712.js';

/** Every sqlite migration, oldest first. Rewritten by `npm run migration:create`. */
export const sqliteMigrations: MigrationObject[] = [
  { name: 'Migration20261130094927', class: M0 },
  { name: 'Migration20261130100407', class: M1 },
  { name: 'Migration20261130201331', class: M2 },
  { name: 'Migration20261130204123', class: M3 },
  { name: 'Migration20261201020820', class: M4 },
  { name: 'Migration20261201050553', class: M5 },
  { name: 'Migration20261201093549', class: M6 },
  { name: 'Migration20261201101247', class: M7 },
  { name: 'Migration20261201154222', class: M8 },
  { name: 'Migration20261201170420', class: M9 },
  { name: 'Migration20261201194917', class: M10 },
  { name: 'Migration20261202034821', class: M11 },
  { name: 'Migration20261202044143', class: M12 },
  { name: 'Migration20261202070535', class: M13 },
  { name: 'Migration20261202180712', class: M14 },
];
