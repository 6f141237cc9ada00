// The playground's "Sign in" button: OpenID Connect's authorization-code
// flow with PKCE (S256), run by the page itself as a public client, when
// internal/playground names an issuer and a client id in the page's meta
// tags (procsvc's --oidc-issuer and --oidc-playground-client-id). Without
// them there is no button and nothing here runs.
//
// The provider's access token becomes the playground's token, kept in
// sessionStorage and sent as "Authorization: Bearer ..." exactly as a pasted
// pms_ token is (token.js): it is the token OAuth meant for an API, and
// procsvc takes it whether opaque (resolved through the provider's userinfo
// endpoint) or a JWT (whose audience must then be among --oidc-audience).
// Who signed in is what the provider's userinfo endpoint says with it.
//
// Every request to the provider (discovery, token, userinfo) is a fetch to
// the issuer's origin, the one other origin the page's
// Content-Security-Policy allows; a provider whose endpoints live on
// another origin is told apart with a clear message instead of a CSP error.
import { forgetToken, saveToken } from './token.js';

const PENDING_KEY = 'procsvc.playground.signin'; // state and code_verifier, between leaving and coming back
const WHO_KEY = 'procsvc.playground.who'; // who signed in, and with which token: {who, token}

function meta(name) {
  return document.querySelector(`meta[name="${name}"]`)?.getAttribute('content')?.trim() ?? '';
}

// signInConfig is the issuer and client id the server gave the page, or
// null when sign-in is not configured (or the page was not served by
// internal/playground, whose placeholders would still be there).
export function signInConfig() {
  const issuer = meta('procsvc-oidc-issuer');
  const clientId = meta('procsvc-oidc-client-id');
  if (!issuer || !clientId || issuer.startsWith('__') || clientId.startsWith('__')) return null;
  return { issuer: issuer.replace(/\/+$/, ''), clientId };
}

function session() {
  try {
    return window.sessionStorage;
  } catch {
    return null;
  }
}

// redirectURI is where the provider sends the browser back: this page,
// without its query.
function redirectURI() {
  return `${window.location.origin}${window.location.pathname}`;
}

function base64url(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomString() {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

async function s256(verifier) {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
}

// onIssuerOrigin refuses an endpoint the page may not reach.
function onIssuerOrigin(cfg, what, url) {
  if (typeof url !== 'string' || !url) throw new Error(`the provider's discovery document names no ${what}`);
  if (new URL(url).origin !== new URL(cfg.issuer).origin) {
    throw new Error(
      `the provider's ${what} (${url}) is on another origin than its issuer; the playground may only reach ${new URL(cfg.issuer).origin}`,
    );
  }
  return url;
}

async function discover(cfg) {
  const resp = await fetch(`${cfg.issuer}/.well-known/openid-configuration`, { headers: { accept: 'application/json' } });
  if (!resp.ok) throw new Error(`the provider's discovery answered ${resp.status}`);
  const doc = await resp.json();
  if (doc.issuer !== cfg.issuer && doc.issuer !== `${cfg.issuer}/`) {
    throw new Error(`the provider's discovery names issuer ${doc.issuer}, not ${cfg.issuer}`);
  }
  return doc;
}

// signIn leaves for the provider's login page with a fresh state and PKCE
// verifier kept in sessionStorage for the way back.
export async function signIn(cfg) {
  const doc = await discover(cfg);
  const authorize = doc.authorization_endpoint;
  if (typeof authorize !== 'string' || !/^https?:/.test(authorize)) throw new Error("the provider's discovery names no authorization endpoint");
  const state = randomString();
  const verifier = randomString();
  session()?.setItem(PENDING_KEY, JSON.stringify({ state, verifier }));
  const url = new URL(authorize);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: cfg.clientId,
    redirect_uri: redirectURI(),
    scope: 'openid email profile',
    state,
    code_challenge: await s256(verifier),
    code_challenge_method: 'S256',
  }).toString();
  window.location.assign(url.toString());
}

// completeSignIn finishes a sign-in when the page is the provider's
// redirect back (a code and a state in its query): the query is dropped
// from the address bar, the code exchanged with the verifier, and the
// access token kept. It resolves to an error message ('' when all went
// well or there was nothing to finish).
export async function completeSignIn(cfg) {
  if (!cfg) return '';
  const params = new URLSearchParams(window.location.search);
  if (!params.has('state') || !(params.has('code') || params.has('error'))) return '';
  window.history.replaceState(null, '', redirectURI() + window.location.hash);
  const pending = session()?.getItem(PENDING_KEY);
  session()?.removeItem(PENDING_KEY);
  let expected;
  try {
    expected = JSON.parse(pending ?? 'null');
  } catch {
    expected = null;
  }
  if (!expected || params.get('state') !== expected.state) {
    return 'Sign-in failed: this answer from the provider was not asked for by this tab (its state does not match). Sign in again.';
  }
  if (params.has('error')) {
    return `Sign-in failed: the provider answered ${params.get('error')}${params.get('error_description') ? `: ${params.get('error_description')}` : ''}.`;
  }
  try {
    const doc = await discover(cfg);
    const tokenURL = onIssuerOrigin(cfg, 'token endpoint', doc.token_endpoint);
    const resp = await fetch(tokenURL, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: params.get('code'),
        redirect_uri: redirectURI(),
        client_id: cfg.clientId,
        code_verifier: expected.verifier,
      }),
    });
    const answer = await resp.json().catch(() => ({}));
    if (!resp.ok || typeof answer.access_token !== 'string' || !answer.access_token) {
      throw new Error(`the token endpoint answered ${resp.status}${answer.error ? ` (${answer.error})` : ''}`);
    }
    const who = await whoIs(cfg, doc, answer.access_token);
    saveToken(answer.access_token);
    session()?.setItem(WHO_KEY, JSON.stringify({ who, token: answer.access_token }));
    return '';
  } catch (err) {
    return `Sign-in failed: ${err && err.message ? err.message : err}.`;
  }
}

// whoIs is the signed-in person as the provider's userinfo endpoint names
// them: their email, else their name or subject.
async function whoIs(cfg, doc, accessToken) {
  const url = onIssuerOrigin(cfg, 'userinfo endpoint', doc.userinfo_endpoint);
  const resp = await fetch(url, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } });
  if (!resp.ok) throw new Error(`the userinfo endpoint answered ${resp.status}`);
  const info = await resp.json();
  return String(info.email || info.preferred_username || info.name || info.sub || 'someone');
}

// signedInAs is who signed in, when token (the session's) is still the one
// the sign-in kept ('' otherwise: a token pasted since is nobody's sign-in).
export function signedInAs(token) {
  let kept;
  try {
    kept = JSON.parse(session()?.getItem(WHO_KEY) ?? 'null');
  } catch {
    kept = null;
  }
  return kept && token && kept.token === token ? String(kept.who) : '';
}

// signOut forgets the token and who signed in, in this tab. The provider's
// own session (its cookie on its origin) is left alone: the next Sign in
// may not ask for the password again.
export function signOut() {
  session()?.removeItem(WHO_KEY);
  forgetToken();
}
