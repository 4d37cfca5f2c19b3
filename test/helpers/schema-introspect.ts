import type { MikroORM } from '@mikro-orm/core';

/**
 * The schema a database really has, read back from its catalogue (not from the entities):
 * per table its columns (type, nullability, default, primary key), indexes and foreign keys,
 * in a canonical order so two databases built different ways can be compared with toEqual.
 */
export interface TableShape {
  columns: Record<string, string>;
  indexes: string[];
  foreignKeys: string[];
  checks: string[];
}

type Execute = (sql: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

function executor(orm: MikroORM): Execute {
  const connection = orm.em.getConnection() as unknown as {
    execute(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  };
  return (sql, params = []) => connection.execute(sql, params);
}

/** Tables made by the migrator itself, not by the schema. */
const MIGRATOR_TABLES = new Set(['fairway_migrations']);

export async function introspectSchema(
  orm: MikroORM,
  dialect: 'sqlite' | 'postgresql',
): Promise<Record<string, TableShape>> {
  return dialect === 'sqlite' ? introspectSqlite(executor(orm)) : introspectPostgres(executor(orm));
}

async function introspectSqlite(execute: Execute): Promise<Record<string, TableShape>> {
  const tables = await execute(
    `select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`,
  );
  const out: Record<string, TableShape> = {};
  for (const { name } of tables) {
    const table = String(name);
    if (MIGRATOR_TABLES.has(table)) continue;
    const columns: Record<string, string> = {};
    for (const c of await execute(`pragma table_info(\`${table}\`)`)) {
      columns[String(c.name)] =
        `${String(c.type).toLowerCase()} ${c.notnull ? 'not null' : 'null'} default=${c.dflt_value ?? '-'} pk=${c.pk}`;
    }
    const indexes: string[] = [];
    for (const index of await execute(`pragma index_list(\`${table}\`)`)) {
      // Implicit primary-key indexes are covered by the columns' pk flags.
      if (index.origin === 'pk') continue;
      const cols = (await execute(`pragma index_info(\`${String(index.name)}\`)`)).map((c) => String(c.name));
      indexes.push(`${index.unique ? 'unique ' : ''}(${cols.join(', ')})`);
    }
    const foreignKeys = (await execute(`pragma foreign_key_list(\`${table}\`)`)).map(
      (fk) => `${fk.from} -> ${fk.table}(${fk.to}) on update ${fk.on_update} on delete ${fk.on_delete}`,
    );
    const sql = String(
      (await execute(`select sql from sqlite_master where type = 'table' and name = ?`, [table]))[0]?.sql ??
        '',
    );
    // CHECK constraints (enums) live only in the table's DDL text.
    const checks = [...sql.matchAll(/check\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)/gi)].map((m) =>
      m[1]!.replace(/\s+/g, ' ').replace(/[`"]/g, '').trim(),
    );
    out[table] = { columns, indexes: indexes.sort(), foreignKeys: foreignKeys.sort(), checks: checks.sort() };
  }
  return out;
}

async function introspectPostgres(execute: Execute): Promise<Record<string, TableShape>> {
  const out: Record<string, TableShape> = {};
  const columns = await execute(
    `select table_name, column_name, data_type, udt_name, is_nullable, column_default, character_maximum_length, numeric_precision, numeric_scale, datetime_precision
       from information_schema.columns where table_schema = current_schema() order by table_name, column_name`,
  );
  for (const c of columns) {
    const table = String(c.table_name);
    if (MIGRATOR_TABLES.has(table)) continue;
    out[table] ??= { columns: {}, indexes: [], foreignKeys: [], checks: [] };
    const size = [c.character_maximum_length, c.numeric_precision, c.numeric_scale, c.datetime_precision]
      .map((v) => v ?? '-')
      .join(',');
    out[table]!.columns[String(c.column_name)] =
      `${c.data_type}/${c.udt_name}(${size}) ${c.is_nullable === 'YES' ? 'null' : 'not null'} default=${c.column_default ?? '-'}`;
  }
  const indexes = await execute(
    `select tablename, indexname, indexdef from pg_indexes where schemaname = current_schema()`,
  );
  for (const i of indexes) {
    const shape = out[String(i.tablename)];
    // Index names are part of the schema too (migrations drop and rename them by name).
    if (shape) shape.indexes.push(String(i.indexdef).replace(/ ON [\w".]+\./, ' ON '));
  }
  const constraints = await execute(
    `select rel.relname as table_name, con.conname, con.contype, pg_get_constraintdef(con.oid) as def
       from pg_constraint con join pg_class rel on rel.oid = con.conrelid join pg_namespace ns on ns.oid = rel.relnamespace
      where ns.nspname = current_schema()`,
  );
  for (const c of constraints) {
    const shape = out[String(c.table_name)];
    if (!shape) continue;
    if (c.contype === 'f') shape.foreignKeys.push(`${c.conname}: ${c.def}`);
    else if (c.contype === 'c') shape.checks.push(`${c.conname}: ${c.def}`);
  }
  for (const shape of Object.values(out)) {
    shape.indexes.sort();
    shape.foreignKeys.sort();
    shape.checks.sort();
  }
  return out;
}
