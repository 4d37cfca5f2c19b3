// Sign-in with the gateway's OpenID issuer: authorization code with PKCE (S256). The verifier and a
// state stay in session storage; the issuer sends the person back to the console's `/` with a code,
// which the gateway exchanges (POST /console/oidc/token) for the ID token the console then uses.
// The code leaves the URL at once; no token is ever put in one.
import { signIn } from './session.js';

export interface OidcOffer {
  issuer: string;
  clientId: string;
  scopes: string;
  authorizationEndpoint: string;
}

const PENDING = 'fairway.oidc';

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const random = (n: number) => base64url(crypto.getRandomValues(new Uint8Array(n)));

export async function offer(): Promise<OidcOffer | null> {
  const res = await fetch('/console/config').catch(() => null);
  const body = (await res?.json().catch(() => null)) as { oidc?: OidcOffer | null } | null;
  return body?.oidc ?? null;
}

/** Sends the person to the issuer's sign-in page. */
export async function startSignIn(o: OidcOffer): Promise<void> {
  const verifier = random(32);
  const state = random(16);
  const challenge = base64url(
    new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))),
  );
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state }));
  const url = new URL(o.authorizationEndpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: o.clientId,
    redirect_uri: `${location.origin}/`,
    scope: o.scopes,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

/** Back from the issuer: the code exchanged and the person signed in; a problem in words, or null. */
export async function finishSignIn(): Promise<string | null> {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  const state = params.get('state');
  const error = params.get('error');
  if (!code && !error) return null;
  history.replaceState(null, '', '/');
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as {
    verifier: string;
    state: string;
  } | null;
  sessionStorage.removeItem(PENDING);
  if (error) return `The issuer refused the sign-in (${error}).`;
  if (!pending || pending.state !== state) return 'That sign-in was not started here: start again.';
  const res = await fetch('/console/oidc/token', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code, codeVerifier: pending.verifier, redirectUri: `${location.origin}/` }),
  });
  const body = (await res.json().catch(() => null)) as { token?: string; error?: { message: string } } | null;
  if (!res.ok || !body?.token) return body?.error?.message ?? `The gateway answered ${res.status}.`;
  signIn(body.token);
  return null;
}
