// Who is signed in: the bearer credential (an API token or an OIDC access token) kept in session
// storage for this tab only, never in a URL; and why the person was sent back to sign-in.
import { signal } from '@preact/signals';

const KEY = 'fairway.credential';
const NOTICE = 'fairway.notice';

export const credential = signal<string | null>(sessionStorage.getItem(KEY));
/** Shown on the sign-in page after an expiry or a revocation. */
export const notice = signal<string | null>(sessionStorage.getItem(NOTICE));

export function signIn(bearer: string): void {
  sessionStorage.setItem(KEY, bearer);
  sessionStorage.removeItem(NOTICE);
  notice.value = null;
  credential.value = bearer;
}

export function signOut(why: string | null = null): void {
  sessionStorage.removeItem(KEY);
  if (why) sessionStorage.setItem(NOTICE, why);
  else sessionStorage.removeItem(NOTICE);
  notice.value = why;
  credential.value = null;
}
