import {
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from 'graphql';

/** A place in a field's arguments that takes an ID, e.g. ['input', 'tenantId']. */
export type IdPath = string[];

/** Values for required non-ID inputs, chosen so they pass validation (the check under test is
 * authorization).
 */
const VALID_BY_NAME: Record<string, unknown> = {
  slug: 'matrix-probe',
  name: 'matrix-probe',
  flavor: 'h100-80g',
  start: '08:00',
  end: '20:00',
  timeZone: 'Europe/Berlin',
  days: [1, 2, 3],
  email: 'probe@probe.example',
  description: 'probe',
  mountPath: '/probe',
  expiresInDays: 30,
  role: 'VIEWER',
  scopes: ['TENANT_READ'],
  // openBreakGlass: 10–500 characters.
  reason: 'matrix probe: a valid reason',
};

export function idPathsOf(field: GraphQLField<unknown, unknown>): IdPath[] {
  const paths: IdPath[] = [];
  const walk = (type: GraphQLInputType, path: string[]) => {
    const named = getNamedType(type);
    if (named.name === 'ID') paths.push(path);
    else if (isInputObjectType(named))
      for (const f of Object.values(named.getFields())) walk(f.type, [...path, f.name]);
  };
  for (const arg of field.args) walk(arg.type, [arg.name]);
  return paths;
}

/**
 * Builds argument values: required inputs get valid values, every ID position gets
 * `idFor(path)` (optional ID positions too, so an optional tenantId is probed as well).
 */
export function buildArgs(
  field: GraphQLField<unknown, unknown>,
  idFor: (path: IdPath) => string,
): Record<string, unknown> {
  const valueFor = (name: string, type: GraphQLInputType, path: string[]): unknown => {
    const named = getNamedType(type);
    if (named.name === 'ID')
      return isListType(isNonNullType(type) ? type.ofType : type) ? [idFor(path)] : idFor(path);
    if (isInputObjectType(named)) {
      const out: Record<string, unknown> = {};
      for (const f of Object.values(named.getFields())) {
        const value = valueFor(f.name, f.type, [...path, f.name]);
        if (value !== undefined) out[f.name] = value;
      }
      return out;
    }
    if (!isNonNullType(type)) return undefined;
    if (name in VALID_BY_NAME) return VALID_BY_NAME[name];
    if (isEnumType(named)) return named.getValues()[0]!.name;
    if (named.name === 'Int') return 1;
    if (named.name === 'Float') return 1;
    if (named.name === 'Boolean') return true;
    if (named.name === 'DateTime') return new Date().toISOString();
    return 'probe';
  };
  const args: Record<string, unknown> = {};
  for (const arg of field.args as readonly GraphQLArgument[]) {
    const value = valueFor(arg.name, arg.type, [arg.name]);
    if (value !== undefined) args[arg.name] = value;
  }
  return args;
}

/** Variable definitions and argument list for a field, e.g. `($a0: ID!)` / `(id: $a0)`. */
export function operationFor(
  kind: 'query' | 'mutation',
  field: GraphQLField<unknown, unknown>,
  args: Record<string, unknown>,
  selection: string,
) {
  const defs: string[] = [];
  const uses: string[] = [];
  const variables: Record<string, unknown> = {};
  field.args.forEach((arg, i) => {
    if (!(arg.name in args)) return;
    defs.push(`$a${i}: ${arg.type.toString()}`);
    uses.push(`${arg.name}: $a${i}`);
    variables[`a${i}`] = args[arg.name];
  });
  const query = `${kind} Probe${defs.length ? `(${defs.join(', ')})` : ''} { ${field.name}${uses.length ? `(${uses.join(', ')})` : ''} ${selection} }`;
  return { query, variables };
}

/**
 * A deep selection of everything readable without arguments, so a leak anywhere in the
 * returned tree shows up in the response text.
 */
export function selectionFor(type: GraphQLOutputType, depth = 4): string {
  const named: GraphQLNamedType = getNamedType(type);
  if (isScalarType(named) || isEnumType(named)) return '';
  if (!(isObjectType(named) || isInterfaceType(named)) || depth === 0) return '{ __typename }';
  const parts = ['__typename'];
  for (const f of Object.values(named.getFields())) {
    if (f.args.some((a) => isNonNullType(a.type))) continue;
    const inner = getNamedType(f.type);
    if (isScalarType(inner) || isEnumType(inner)) parts.push(f.name);
    else if (depth > 1) parts.push(`${f.name} ${selectionFor(f.type, depth - 1)}`);
  }
  return `{ ${parts.join(' ')} }`;
}

export function rootFields(schema: GraphQLSchema, kind: 'query' | 'mutation') {
  const type = kind === 'query' ? schema.getQueryType() : schema.getMutationType();
  return Object.values(type?.getFields() ?? {});
}

export function subscriptionFields(schema: GraphQLSchema) {
  return Object.values(schema.getSubscriptionType()?.getFields() ?? {});
}

/** Every string anywhere in a value (response bodies, subscription events, error messages). */
export function allStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) allStrings(item, out);
  else if (value && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) {
      out.push(key);
      allStrings(item, out);
    }
  return out;
}
