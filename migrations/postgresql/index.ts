import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261130094930 as M0 } from './Migration20261130094930.js';
import { Migration20261130100417 as M1 } from './Migration20261130100417.js';
import { Migration20261130201329 as M2 } from './Migration20261130201329.js';
import { Migration20261130204139 as M3 } from './Migration20261130204139.js';
import { Migration20261201020823 as M4 } from './Migration20261201020823.js';
import { Migration20261201050556 as M5 } from './Migration20261201050556.js';
import { Migration20261201093550 as M6 } from './Migration20261201093550.js';
import { Migration20261201101250 as M7 } from './Migration20261201101250.js';
import { Migration20261201154223 as M8 } from './Migration20261201154223.js';
import { Migration20261201170427 as M9 } from './Migration20261201170427.js';
import { Migration20261201194920 as M10 } from './Migration20261201194920.js';
import { Migration20261202034823 as M11 } from './Migration20261202034823.js';
import { Migration20261202044145 as M12 } from './Migration20261202044145.js';
import { Migration20261202070537 as M13 } from './Migration20261202070537.js';
import { Migration20261202180715 as M14 } from './Migration20261202180715.js';

/** Every postgresql migration, oldest first. Rewritten by `npm run migration:create`. */
export const postgresqlMigrations: MigrationObject[] = [
  { name: 'Migration20261130094930', class: M0 },
  { name: 'Migration20261130100417', class: M1 },
  { name: 'Migration20261130201329', class: M2 },
  { name: 'Migration20261130204139', class: M3 },
  { name: 'Migration20261201020823', class: M4 },
  { name: 'Migration20261201050556', class: M5 },
  { name: 'Migration20261201093550', class: M6 },
  { name: 'Migration20261201101250', class: M7 },
  { name: 'Migration20261201154223', class: M8 },
  { name: 'Migration20261201170427', class: M9 },
  { name: 'Migration20261201194920', class: M10 },
  { name: 'Migration20261202034823', class: M11 },
  { name: 'Migration20261202044145', class: M12 },
  { name: 'Migration20261202070537', class: M13 },
  { name: 'Migration20261202180715', class: M14 },
];
