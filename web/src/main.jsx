// procsvc's offline GraphQL playground: GraphiQL (codemirror 5 editors, no web
// workers) bundled with every asset it needs, served by internal/playground
// under a Content-Security-Policy that allows no other origin.
import { useEffect } from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { useEditorContext, useSchemaStore } from '@graphiql/react';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { Kind, OperationTypeNode, parse, print, visit } from 'graphql';
import { CloseCode, createClient } from 'graphql-ws/client';
import { setNonce } from 'get-nonce';
import 'graphiql/style.css';
import './playground.css';

// The page's Content-Security-Policy allows no inline styles except <style>
// elements carrying the per-response nonce that internal/playground puts in
// this meta tag. GraphiQL's dialogs (Radix UI's scroll lock, through
// react-style-singleton) insert such elements; get-nonce hands them the nonce.
const nonce = document.querySelector('meta[name="csp-nonce"]')?.getAttribute('content');
if (nonce) setNonce(nonce);

const TOKEN_PLACEHOLDER = '<paste your token>';

export const DEFAULT_HEADERS = `{"Authorization": "Bearer ${TOKEN_PLACEHOLDER}"}`;

export const DEFAULT_QUERY = `# procsvc GraphQL playground
#
# Requests need a bearer token:
#  1. go run ./cmd/procsvc
#     prints one on first start
#     (PROCSVC_TOKEN=pms_...).
#  2. Paste it over
#     ${TOKEN_PLACEHOLDER}
#     in "Headers" below.
#  3. Run: the run button or
#     Ctrl-Enter (Cmd-Enter).
#
# Docs: book icon, top left
# (they load once the token works).
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

// procsvc refuses operations nested more than 12 fields deep, and
// graphql-js's standard introspection query nests its TypeRef fragment 9
// ofType levels deep (15 fields along __schema.types.fields.args.type). Six
// levels describe any type up to [[[T!]!]!]-style wrapping, far more than
// procsvc's schema uses, and keep introspection within 12.
const TYPE_REF_OF_TYPE_LEVELS = 6;

function trimOfType(selectionSet, level) {
  return {
    ...selectionSet,
    selections: selectionSet.selections.flatMap((sel) => {
      if (sel.kind !== Kind.FIELD || sel.name.value !== 'ofType' || !sel.selectionSet) return [sel];
      if (level >= TYPE_REF_OF_TYPE_LEVELS) return [];
      return [{ ...sel, selectionSet: trimOfType(sel.selectionSet, level + 1) }];
    }),
  };
}

export function shallowIntrospectionQuery(query) {
  const doc = visit(parse(query), {
    FragmentDefinition(node) {
      if (node.name.value !== 'TypeRef') return undefined;
      return { ...node, selectionSet: trimOfType(node.selectionSet, 0) };
    },
  });
  return print(doc);
}

// Same-origin endpoint; the page is served by procsvc itself.
const GRAPHQL_PATH = '/graphql';

// subscriptionURL is the same-origin WebSocket address of /graphql, wss:
// when the page came over https:.
export function subscriptionURL(loc = window.location) {
  return `${loc.protocol === 'https:' ? 'wss:' : 'ws:'}//${loc.host}${GRAPHQL_PATH}`;
}

// authorizationOf is the Authorization value of the headers editor's JSON,
// whatever its key's case ('' when there is none).
export function authorizationOf(headers) {
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() === 'authorization') return String(value);
  }
  return '';
}

// operationOf returns the operation of query that GraphiQL runs: the one
// named operationName, else the only one. GraphiQL re-reads the editor's
// operations 100 ms after an edit, so right after one (a paste, then
// Ctrl-Enter) operationName and documentAST may still describe the previous
// text; query is always the current one.
export function operationOf(query, operationName) {
  let doc;
  try {
    doc = parse(query);
  } catch {
    return undefined; // the server will say what is wrong with it
  }
  const ops = doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  return ops.find((d) => operationName && d.name?.value === operationName) ?? (ops.length === 1 ? ops[0] : undefined);
}

// socketError turns what graphql-ws reports (GraphQL errors, an Error, or
// the CloseEvent of a refused or lost connection) into what GraphiQL shows:
// GraphQL errors as they are, the rest as a message without a stack.
function socketError(err) {
  if (Array.isArray(err)) return err;
  if (err instanceof Error) return { message: err.message };
  if (typeof err?.code === 'number') return { message: `Socket closed with event ${err.code} ${err.reason ?? ''}`.trim() };
  return { message: String(err) };
}

// observe runs one subscription on client as the observable GraphiQL
// accepts. (@graphiql/toolkit's wsClient option wraps it in an async
// iterator instead, which leaves an unhandled rejection in the page when
// the socket closes with an error.)
function observe(client, { query, variables, operationName }) {
  return {
    subscribe(observer) {
      const unsubscribe = client.subscribe(
        { query, variables, operationName },
        {
          next: (result) => observer.next(result),
          error: (err) => observer.error(socketError(err)),
          complete: () => observer.complete(),
        },
      );
      return { unsubscribe };
    },
  };
}

// Queries and mutations go over HTTP with the headers editor's headers.
// Subscriptions go over WebSocket (graphql-transport-ws), where a browser
// cannot set headers: the token travels in connection_init's payload as
// {"authorization": "Bearer ..."}. There is one client per Authorization
// value; it connects only while a subscription runs. Another token in the
// headers editor disposes of the old client (ending what ran under the old
// token), and the next subscription connects with the new one.
export function createProcsvcFetcher() {
  const httpFetcher = createGraphiQLFetcher({ url: GRAPHQL_PATH });
  let ws; // { authorization, client }
  const wsClientFor = (authorization) => {
    if (ws?.authorization === authorization) return ws.client;
    ws?.client.dispose();
    const client = createClient({
      url: subscriptionURL(),
      connectionParams: authorization ? { authorization } : {},
      // Retry lost connections (graphql-ws's default), but a refused token
      // stays refused: show that at once.
      shouldRetry: (closed) => typeof closed?.code === 'number' && closed.code !== CloseCode.Forbidden,
    });
    ws = { authorization, client };
    return client;
  };

  return (params, opts) => {
    const op = operationOf(params.query, params.operationName);
    if (op?.operation === OperationTypeNode.SUBSCRIPTION) {
      return observe(wsClientFor(authorizationOf(opts?.headers)), { ...params, operationName: op.name?.value });
    }
    if (params.operationName === 'IntrospectionQuery' && typeof params.query === 'string') {
      try {
        return httpFetcher({ ...params, query: shallowIntrospectionQuery(params.query) }, opts);
      } catch {
        // Not the query we know how to trim: send it as it is.
      }
    }
    return httpFetcher(params, opts);
  };
}

const fetcher = createProcsvcFetcher();

// GraphiQL introspects once on load, before a token has been pasted (and
// procsvc answers unauthenticated requests with an error). Re-introspect
// whenever the headers editor settles on new content, so the docs explorer
// and autocompletion fill in as soon as a valid token is there.
function ReintrospectOnHeaderChange() {
  const { headerEditor } = useEditorContext({ nonNull: true });
  const introspect = useSchemaStore((s) => s.introspect);
  useEffect(() => {
    if (!headerEditor) return undefined;
    let last = headerEditor.getValue();
    let timer;
    const onChange = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        const now = headerEditor.getValue();
        if (now === last) return;
        last = now;
        try {
          JSON.parse(now);
        } catch {
          return; // still typing
        }
        introspect();
      }, 500);
    };
    headerEditor.on('change', onChange);
    return () => {
      clearTimeout(timer);
      headerEditor.off('change', onChange);
    };
  }, [headerEditor, introspect]);
  return null;
}

function Playground() {
  return (
    <GraphiQL
      fetcher={fetcher}
      defaultQuery={DEFAULT_QUERY}
      defaultHeaders={DEFAULT_HEADERS}
      defaultEditorToolsVisibility="headers"
      isHeadersEditorEnabled
      shouldPersistHeaders={false}
    >
      <GraphiQL.Logo>procsvc</GraphiQL.Logo>
      <GraphiQL.Footer>
        <ReintrospectOnHeaderChange />
        <span className="procsvc-hint">
          No token? Start procsvc on an empty database (<code>go run ./cmd/procsvc</code>): it prints
          one. Paste it into Headers.
        </span>
      </GraphiQL.Footer>
    </GraphiQL>
  );
}

createRoot(document.getElementById('playground')).render(<Playground />);
