import { randomUUID } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';

export interface RequestIdOptions {
  /** Header read from the client (if it looks sane) and echoed on the response. */
  headerName?: string;
}

const SAFE_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Gives every request an id (the client's, or a new one): in the context, the audit log and the response. */
export function useRequestId(options: RequestIdOptions = {}): Plugin<{ requestId?: string }> {
  const headerName = options.headerName ?? 'x-request-id';
  const ids = new WeakMap<Request, string>();
  const idFor = (request: Request) => {
    let id = ids.get(request);
    if (!id) {
      const supplied = request.headers.get(headerName);
      id = supplied && SAFE_ID.test(supplied) ? supplied : randomUUID();
      ids.set(request, id);
    }
    return id;
  };
  return {
    onContextBuilding({ context, extendContext }) {
      const request = (context as { request?: Request }).request;
      extendContext({ requestId: request ? idFor(request) : randomUUID() });
    },
    onResponse({ request, response }) {
      response.headers.set(headerName, idFor(request));
    },
  };
}
