/**
 * The patch formats the test API server accepts besides server-side apply (apply.ts): JSON merge
 * patch (RFC 7386; strategic merge patch is treated as one, so lists are replaced rather than merged
 * by key) and JSON patch (RFC 6902).
 */
import { ApiError } from './resources.js';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new ApiError(422, 'Invalid', `invalid JSON pointer ${path}`);
  return path
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

interface JsonPatchOp {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

/** RFC 6902: add, remove, replace, test, move, copy. Errors are 422 like the real server's. */
export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops))
    throw new ApiError(400, 'BadRequest', 'a JSON patch must be an array of operations');
  let doc = structuredClone(target);
  const parentOf = (parts: string[]): [any, string] => {
    let node: any = doc;
    for (const part of parts.slice(0, -1)) {
      node = node?.[part];
      if (typeof node !== 'object' || node === null)
        throw new ApiError(422, 'Invalid', `path /${parts.join('/')} does not exist`);
    }
    return [node, parts[parts.length - 1]!];
  };
  const read = (path: string): unknown => {
    let node: any = doc;
    for (const part of pointer(path)) {
      if (typeof node !== 'object' || node === null || !(part in node))
        throw new ApiError(422, 'Invalid', `path ${path} does not exist`);
      node = node[part];
    }
    return node;
  };
  const remove = (path: string): void => {
    const [parent, key] = parentOf(pointer(path));
    if (!(key in parent)) throw new ApiError(422, 'Invalid', `path ${path} does not exist`);
    if (Array.isArray(parent)) parent.splice(Number(key), 1);
    else delete parent[key];
  };
  const add = (path: string, value: unknown, replace: boolean): void => {
    const parts = pointer(path);
    if (parts.length === 0) {
      doc = structuredClone(value);
      return;
    }
    const [parent, key] = parentOf(parts);
    if (replace && !(key in parent)) throw new ApiError(422, 'Invalid', `path ${path} does not exist`);
    if (Array.isArray(parent) && !replace)
      parent.splice(key === '-' ? parent.length : Number(key), 0, structuredClone(value));
    else parent[key] = structuredClone(value);
  };
  for (const op of ops as JsonPatchOp[]) {
    switch (op.op) {
      case 'add':
        add(op.path, op.value, false);
        break;
      case 'replace':
        add(op.path, op.value, true);
        break;
      case 'remove':
        remove(op.path);
        break;
      case 'test':
        if (JSON.stringify(read(op.path)) !== JSON.stringify(op.value))
          throw new ApiError(422, 'Invalid', `test failed at ${op.path}`);
        break;
      case 'copy':
        add(op.path, read(op.from ?? ''), false);
        break;
      case 'move': {
        const v = read(op.from ?? '');
        remove(op.from ?? '');
        add(op.path, v, false);
        break;
      }
      default:
        throw new ApiError(422, 'Invalid', `unknown JSON patch op ${String(op.op)}`);
    }
  }
  return doc;
}
