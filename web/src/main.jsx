// procsvc's offline GraphQL playground: GraphiQL (codemirror 5 editors, no web
// workers) bundled with every asset it needs, served by internal/playground
// under a Content-Security-Policy that allows no other origin.
import { useEffect } from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { useEditorContext, useSchemaStore } from '@graphiql/react';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { Kind, parse, print, visit } from 'graphql';
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
const httpFetcher = createGraphiQLFetcher({ url: '/graphql' });
const fetcher = (params, opts) => {
  if (params.operationName === 'IntrospectionQuery' && typeof params.query === 'string') {
    try {
      return httpFetcher({ ...params, query: shallowIntrospectionQuery(params.query) }, opts);
    } catch {
      // Not the query we know how to trim: send it as it is.
    }
  }
  return httpFetcher(params, opts);
};

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
