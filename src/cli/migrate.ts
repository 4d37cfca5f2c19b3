/** `npm run migrate`: applies pending migrations to the configured database and exits. */
import { ConfigError, load } from '../config/index.js';
import { migrate, openDatabase } from '../persistence/orm.js';

try {
  const config = load();
  for (const warning of config.warnings) console.warn(`migrate: configuration: ${warning}`);
  const orm = await openDatabase({ database: config.database, timeouts: config.database.timeouts });
  const applied = await migrate(orm);
  console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
  await orm.close(true);
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
}
