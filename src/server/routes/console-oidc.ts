// The web console's sign-in with the OpenID issuer (authorization code with PKCE, a public client):
// `GET /console/config` says whether it is offered and where to send the person (the issuer's
// authorization endpoint, discovered here, so the browser never talks to the issuer but for the
// sign-in page itself); `POST /console/oidc/token` exchanges the code, with the verifier the browser
// kept, at the issuer's token endpoint and answers with the ID token the console then sends as its
// bearer (verified like any JWT, on every request).
import type { Route } from '../../../plugins/useRoutes.js';
import { jsonRouteError } from './route-errors.js';

export interface ConsoleOidcOptions {
  oidc?: { issuer: string; consoleClientId?: string; consoleScopes: string };
  fetch?: typeof fetch;
  logError?: (error: unknown) => void;
}

interface Discovery {
  authorization_endpoint: string;
  token_endpoint: string;
}

const json = (Response: typeof globalThis.Response, body: unknown) =>
  new Response(JSON.stringify(body), {
    status: 200,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  });

export function consoleOidcRoutes(options: ConsoleOidcOptions): Route[] {
  const doFetch = options.fetch ?? fetch;
  const oidc = options.oidc?.consoleClientId ? options.oidc : undefined;
  let discovery: Promise<Discovery> | null = null;
  const discover = (): Promise<Discovery> => {
    discovery ??= (async () => {
      const base = oidc!.issuer.replace(/\/$/, '');
      const res = await doFetch(`${base}/.well-known/openid-configuration`, {
        signal: AbortSignal.timeout(5000),
      });
      if (!res.ok) throw new Error(`the issuer's discovery answered ${res.status}`);
      return (await res.json()) as Discovery;
    })().catch((error: unknown) => {
      discovery = null;
      throw error;
    });
    return discovery;
  };
  return [
    {
      method: 'GET',
      path: '/console/config',
      async handler({ Response }) {
        if (!oidc) return json(Response, { oidc: null });
        try {
          const d = await discover();
          return json(Response, {
            oidc: {
              issuer: oidc.issuer,
              clientId: oidc.consoleClientId,
              scopes: oidc.consoleScopes,
              authorizationEndpoint: d.authorization_endpoint,
            },
          });
        } catch (error) {
          options.logError?.(error);
          // The console still offers API tokens.
          return json(Response, { oidc: null });
        }
      },
    },
    {
      method: 'POST',
      path: '/console/oidc/token',
      async handler({ request, url, Response }) {
        if (!oidc)
          return jsonRouteError(Response, 404, 'NOT_FOUND', 'Sign-in with an issuer is not configured.');
        const body = (await request.json().catch(() => null)) as {
          code?: unknown;
          codeVerifier?: unknown;
          redirectUri?: unknown;
        } | null;
        const { code, codeVerifier, redirectUri } = body ?? {};
        // The console's own page is the only redirect: a code meant for anything else is not exchanged here.
        const own = `${url.origin}/`;
        if (typeof code !== 'string' || typeof codeVerifier !== 'string' || redirectUri !== own)
          return jsonRouteError(
            Response,
            400,
            'BAD_USER_INPUT',
            'Send the code, its verifier and this console as redirectUri.',
          );
        try {
          const d = await discover();
          const res = await doFetch(d.token_endpoint, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              grant_type: 'authorization_code',
              code,
              code_verifier: codeVerifier,
              redirect_uri: own,
              client_id: oidc.consoleClientId!,
            }),
            signal: AbortSignal.timeout(10_000),
          });
          const tokens = (await res.json().catch(() => ({}))) as { id_token?: string; expires_in?: number };
          if (!res.ok || !tokens.id_token)
            return jsonRouteError(
              Response,
              401,
              'UNAUTHENTICATED',
              'The issuer did not accept the sign-in: start again.',
            );
          return json(Response, { token: tokens.id_token, expiresIn: tokens.expires_in ?? null });
        } catch (error) {
          options.logError?.(error);
          return jsonRouteError(
            Response,
            503,
            'UNAVAILABLE',
            'The issuer did not answer: try again, or sign in with an API token.',
          );
        }
      },
    },
  ];
}
