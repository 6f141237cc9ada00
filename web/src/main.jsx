// procsvc's offline GraphQL playground: GraphiQL (codemirror 5 editors, no web
// workers) bundled with every asset it needs, served by internal/playground
// under a Content-Security-Policy that allows no other origin.
import { useEffect } from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { useEditorContext } from '@graphiql/react';
import { setNonce } from 'get-nonce';
import { createProcsvcFetcher } from './fetcher.js';
import { DOCS_PLUGIN, EXPLORER_PLUGIN } from './panes.jsx';
import { loadSchema, schemaState } from './schema.js';
import { completeSignIn, signIn, signInConfig, signOut, signedInAs } from './signin.js';
import { createValue, useValue } from './state.js';
import {
  TOKEN_PLACEHOLDER,
  forgetToken,
  headersFor,
  loadToken,
  saveToken,
  tokenFreeStorage,
  tokenOfHeadersText,
} from './token.js';
import 'graphiql/style.css';
import '@graphiql/plugin-explorer/style.css';
import './playground.css';

// The page's Content-Security-Policy allows no inline styles except <style>
// elements carrying the per-response nonce that internal/playground puts in
// this meta tag. GraphiQL's dialogs (Radix UI's scroll lock, through
// react-style-singleton) insert such elements; get-nonce hands them the nonce.
const nonce = document.querySelector('meta[name="csp-nonce"]')?.getAttribute('content');
if (nonce) setNonce(nonce);

export const DEFAULT_QUERY = `# procsvc GraphQL playground
#
# Requests need a bearer token:
#  1. go run ./cmd/procsvc
#     prints one on first start
#     (PROCSVC_TOKEN=pms_...).
#  2. Paste it over
#     ${TOKEN_PLACEHOLDER}
#     in "Headers" below. It is kept
#     until this tab closes.
#  3. Run: the run button or
#     Ctrl-Enter (Cmd-Enter).
#
# Docs: book icon, top left.
# Explorer (folder icon): build a
# query by ticking fields.
# Autocomplete: Ctrl-Space.

query Overview {
  viewer {
    name
    role
  }
  procedures(first: 10) {
    totalCount
    nodes {
      shortId
      name
      state
      dueAt
      doer {
        name
      }
      project {
        name
      }
    }
  }
}
`;

const fetcher = createProcsvcFetcher();
const PLUGINS = [EXPLORER_PLUGIN];
const storage = tokenFreeStorage();

// sessionToken is the token kept for this tab (token.js).
const sessionToken = createValue(loadToken());

// signInCfg is the identity provider of the Sign in button (signin.js),
// null when the server configured none: then the page is as it always was.
const signInCfg = signInConfig();
// signInError says why the last sign-in failed ('' when it did not).
const signInError = createValue('');

// How long the headers editor must rest before its text counts: a paste is
// one change, typing many.
const HEADERS_SETTLE_MS = 300;

// HeadersWatcher keeps the schema and the session's token in step with the
// headers editor: once its text settles on a new value that parses, the
// schema loads again with it (the docs and explorer fill in as soon as a
// valid token is there), and a token the server accepted for that is kept
// for the session (a mistyped one is not: a reload brings back the last
// token that worked). It also answers GraphiQL's "Re-fetch GraphQL schema"
// button and Ctrl-Shift-R, which only reach GraphiQL's own introspection,
// unused here (schema.js).
function HeadersWatcher() {
  const { headerEditor } = useEditorContext({ nonNull: true });
  useEffect(() => {
    if (!headerEditor) return undefined;
    let loadedWith;
    const load = (text) => {
      loadedWith = text;
      loadSchema(text).then((accepted) => {
        const token = tokenOfHeadersText(text);
        if (accepted && token && token !== sessionToken.get()) {
          saveToken(token);
          sessionToken.set(token);
        }
      });
    };
    load(headerEditor.getValue());
    let timer;
    const settle = () => {
      const text = headerEditor.getValue();
      if (text === loadedWith) return;
      try {
        JSON.parse(text);
      } catch {
        return; // still typing
      }
      load(text);
    };
    const onChange = () => {
      clearTimeout(timer);
      timer = setTimeout(settle, HEADERS_SETTLE_MS);
    };
    const refetch = () => load(headerEditor.getValue());
    const onClick = (e) => {
      if (e.target instanceof Element && e.target.closest('button[aria-label="Re-fetch GraphQL schema"]')) refetch();
    };
    const onKey = (e) => {
      if (e.ctrlKey && e.key === 'R') refetch();
    };
    headerEditor.on('change', onChange);
    document.addEventListener('click', onClick, true);
    window.addEventListener('keydown', onKey);
    return () => {
      clearTimeout(timer);
      headerEditor.off('change', onChange);
      document.removeEventListener('click', onClick, true);
      window.removeEventListener('keydown', onKey);
    };
  }, [headerEditor]);
  return null;
}

// TokenStatus says where the token is kept and offers to forget it.
// Forgetting reloads the page: every tab's headers, the history's entries
// of this session and the open WebSocket hold the token in memory, and a
// reload drops them all (the query and tabs are kept, without it).
function TokenStatus() {
  const token = useValue(sessionToken);
  if (signInCfg) return <SignInStatus token={token} />;
  if (!token) {
    return (
      <span className="procsvc-hint">
        No token? Start procsvc on an empty database (<code>go run ./cmd/procsvc</code>): it prints one. Paste
        it into Headers; it is kept until this browser tab closes.
      </span>
    );
  }
  return <KeptToken />;
}

function KeptToken() {
  return (
    <span className="procsvc-hint procsvc-token-status">
      Your token is kept in this browser tab until it closes (sessionStorage: no cookie, nothing saved across
      sessions).{' '}
      <button
        type="button"
        className="procsvc-forget-token"
        onClick={() => {
          forgetToken();
          window.location.reload();
        }}
      >
        Forget token
      </button>
    </span>
  );
}

function SignInButton({ label }) {
  return (
    <button
      type="button"
      className="procsvc-sign-in"
      onClick={() => {
        signInError.set('');
        signIn(signInCfg).catch((err) => signInError.set(`Sign-in failed: ${err && err.message ? err.message : err}.`));
      }}
    >
      {label}
    </button>
  );
}

// SignInStatus is TokenStatus with an identity provider configured: who is
// signed in and a Sign out button, or a Sign in button (beside the pasted
// token's status, if there is one), and why the last sign-in failed.
function SignInStatus({ token }) {
  const error = useValue(signInError);
  const { status } = useValue(schemaState);
  const who = signedInAs(token);
  if (who) {
    // The provider's token runs out (procsvc then refuses it, and the
    // schema fails to load): offer a fresh sign-in beside Sign out.
    return (
      <span className="procsvc-hint procsvc-signed-in">
        Signed in as <strong className="procsvc-who">{who}</strong>: the provider&apos;s token is kept in this
        browser tab until it closes (sessionStorage).{' '}
        {status === 'failed' ? <SignInButton label="Sign in again" /> : null}
        <button
          type="button"
          className="procsvc-sign-out"
          onClick={() => {
            signOut();
            window.location.reload();
          }}
        >
          Sign out
        </button>
      </span>
    );
  }
  return (
    <span className="procsvc-hint procsvc-sign-in-status">
      <SignInButton label="Sign in" />{' '}
      {error ? (
        <span className="procsvc-sign-in-error" role="alert">
          {error}
        </span>
      ) : token ? (
        <KeptToken />
      ) : (
        <>with your identity provider, or paste a token into Headers; either is kept until this browser tab closes.</>
      )}
    </span>
  );
}

function Playground() {
  const { schema } = useValue(schemaState);
  const token = useValue(sessionToken);
  return (
    <GraphiQL
      fetcher={fetcher}
      schema={schema}
      storage={storage}
      referencePlugin={DOCS_PLUGIN}
      plugins={PLUGINS}
      defaultQuery={DEFAULT_QUERY}
      defaultHeaders={headersFor(token)}
      defaultEditorToolsVisibility="headers"
      isHeadersEditorEnabled
      shouldPersistHeaders={false}
    >
      <GraphiQL.Logo>procsvc</GraphiQL.Logo>
      <GraphiQL.Footer>
        <HeadersWatcher />
        <TokenStatus />
      </GraphiQL.Footer>
    </GraphiQL>
  );
}

function render() {
  createRoot(document.getElementById('playground')).render(<Playground />);
}

if (signInCfg) {
  // Back from the provider's login page: exchange the code before GraphiQL
  // reads the session's token into its headers.
  completeSignIn(signInCfg).then((error) => {
    signInError.set(error);
    sessionToken.set(loadToken());
    render();
  });
} else {
  render();
}
