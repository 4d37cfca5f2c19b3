// Sign-in to the console through a real OpenID provider (oidc-provider, started here): authorization
// code with PKCE, the gateway exchanging the code and verifying the ID token with the provider's JWKS
// like any JWT; the person lands signed in with no token or code left in the URL. A sign-in the console
// did not start (a forged state) is refused.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleBrowser, chromiumAvailable, startConsole } from '../helpers/console-browser.js';

describe.skipIf(!chromiumAvailable)('console sign-in with OpenID Connect', () => {
  let idp: Server;
  let web: ConsoleBrowser;

  beforeAll(async () => {
    // The provider's port first (the gateway is configured with its issuer), its handler once the
    // gateway's origin (the redirect URI) is known.
    let handle: (req: IncomingMessage, res: ServerResponse) => void = (_q, r) => r.end();
    idp = createServer((req, res) => handle(req, res));
    await new Promise<void>((r) => idp.listen(0, '127.0.0.1', () => r()));
    const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    web = await startConsole({
      app: {
        oidc: {
          issuer,
          jwksUrl: `${issuer}/jwks`,
          audience: 'fairway-console',
          consoleClientId: 'fairway-console',
        },
      },
    });
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: 'fairway-console',
          token_endpoint_auth_method: 'none',
          redirect_uris: [`${web.origin}/`],
          response_types: ['code'],
          grant_types: ['authorization_code'],
        },
      ],
      jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'test', alg: 'RS256', use: 'sig' }] },
      pkce: { methods: ['S256'], required: () => true },
      conformIdTokenClaims: false,
      claims: { openid: ['sub'], email: ['email'] },
      findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id, email: id }) }),
      features: { devInteractions: { enabled: true } },
      cookies: { keys: ['fairway-test'] },
    });
    handle = provider.callback();
  }, 120_000);
  afterAll(async () => {
    await web?.close();
    await new Promise<void>((r) => (idp ? idp.close(() => r()) : r()));
  });

  it('signs in at the provider with PKCE and lands on the console as that person, nothing in the URL', async () => {
    const context = await web.browser.newContext();
    const page = await context.newPage();
    await page.goto(web.origin);
    await page.getByRole('button', { name: 'Sign in with your organization' }).click();
    // The provider's own (development) login and consent pages.
    await page.locator('input[name="login"]').fill('max@aurora.example');
    await page.locator('input[name="password"]').fill('any');
    await page.locator('button[type="submit"]').click();
    await page.locator('button[type="submit"]').click(); // consent
    await page.getByRole('navigation', { name: 'Main' }).waitFor({ timeout: 15_000 });
    await expect(page.locator('.who').textContent()).resolves.toContain('Max Member');
    expect(new URL(page.url()).search).toBe('');
    const stored = await page.evaluate(() => JSON.stringify(sessionStorage));
    expect(stored).not.toContain('code');
    await context.close();
  }, 60_000);

  it('a return the console did not start (an unknown state) is refused and nothing is signed in', async () => {
    const context = await web.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${web.origin}/?code=forged&state=forged`);
    await page.getByRole('alert').filter({ hasText: 'not started here' }).waitFor();
    await expect(page.getByRole('button', { name: 'Sign in', exact: true }).count()).resolves.toBe(1);
    await context.close();
  });
});
