// Sign-in with an API token (the demo's tokens work) or, when the gateway has an OpenID issuer for the
// console, with the issuer (oidc.ts). The credential goes to session storage, never a URL.
import { useEffect, useState } from 'preact/hooks';
import { finishSignIn, type OidcOffer, offer, startSignIn } from '../oidc.js';
import { notice, signIn } from '../session.js';

export function SignInPage() {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [issuer, setIssuer] = useState<OidcOffer | null>(null);
  useEffect(() => {
    void finishSignIn().then((why) => why && setProblem(why));
    void offer().then(setIssuer);
  }, []);
  const submit = async (event: Event) => {
    event.preventDefault();
    const bearer = token.trim();
    if (!bearer) return setProblem('Paste an API token.');
    // Checked before it is kept: a wrong token stays on this page with the gateway's answer.
    const res = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ query: '{ viewer { email } }' }),
    });
    const body = (await res.json().catch(() => null)) as { errors?: { message: string }[] } | null;
    if (!res.ok || body?.errors?.length)
      return setProblem(body?.errors?.[0]?.message ?? `The gateway answered ${res.status}.`);
    signIn(bearer);
  };
  return (
    <main class="sign-in">
      <h1>Sign in to Fairway</h1>
      {notice.value && <p role="status">{notice.value}</p>}
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Sign in</button>
        {problem && <p role="alert">{problem}</p>}
      </form>
      {issuer && (
        <p>
          <button type="button" onClick={() => void startSignIn(issuer)}>
            Sign in with your organization
          </button>
        </p>
      )}
    </main>
  );
}
