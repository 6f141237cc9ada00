// How the playground talks to procsvc: queries and mutations over HTTP,
// subscriptions over a same-origin WebSocket (graphql-transport-ws).
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { Kind, OperationTypeNode, parse } from 'graphql';
import { CloseCode, createClient } from 'graphql-ws/client';
import { authorizationOf } from './token.js';

// Same-origin endpoint; the page is served by procsvc itself.
export const GRAPHQL_PATH = '/graphql';

// subscriptionURL is the same-origin WebSocket address of /graphql, wss:
// when the page came over https:.
export function subscriptionURL(loc = window.location) {
  return `${loc.protocol === 'https:' ? 'wss:' : 'ws:'}//${loc.host}${GRAPHQL_PATH}`;
}

// postGraphQL sends one operation over HTTP POST with headers and resolves
// to the response body, whatever the status: procsvc answers a refused
// request with a GraphQL error body ({"errors": [...]}) too.
export const postGraphQL = createGraphiQLFetcher({ url: GRAPHQL_PATH, enableIncrementalDelivery: false });

// operationOf returns the operation of query that GraphiQL runs: the one
// named operationName, else the only one. GraphiQL re-reads the editor's
// operations 100 ms after an edit, so right after one (a paste, then
// Ctrl-Enter) operationName and documentAST may still describe the previous
// text; query is always the current one. Undefined when query does not parse
// or operationName picks none of several operations: the server says which
// it holds.
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

// refusalOverHTTP is what /graphql answers over HTTP to the headers a
// refused WebSocket carried: a refused credential reads the same on every
// transport because this is the very answer a query with it gets. The
// socket's close reason ("Forbidden: <code>", docs/api.md#websocket-close-codes)
// only names the code. Resolves to undefined when HTTP accepts the headers
// (the socket was refused for something else).
async function refusalOverHTTP(headers) {
  const body = await postGraphQL({ query: '{ __typename }' }, { headers });
  return Array.isArray(body?.errors) && body.errors.length > 0 && !body.data ? body : undefined;
}

// observe runs one subscription on client as the observable GraphiQL
// accepts. (@graphiql/toolkit's wsClient option wraps it in an async
// iterator instead, which leaves an unhandled rejection in the page when
// the socket closes with an error.) When procsvc refuses the credential
// (close 4403), the result pane shows what HTTP answers to it.
function observe(client, { query, variables, operationName }, headers) {
  return {
    subscribe(observer) {
      let stopped = false;
      const unsubscribe = client.subscribe(
        { query, variables, operationName },
        {
          next: (result) => observer.next(result),
          error: (err) => {
            if (err?.code !== CloseCode.Forbidden) {
              observer.error(socketError(err));
              return;
            }
            refusalOverHTTP(headers)
              .catch(() => undefined)
              .then((body) => {
                if (stopped) return;
                if (!body) {
                  observer.error(socketError(err));
                  return;
                }
                observer.next(body);
                observer.complete();
              });
          },
          complete: () => observer.complete(),
        },
      );
      return {
        unsubscribe() {
          stopped = true;
          unsubscribe();
        },
      };
    },
  };
}

// createProcsvcFetcher is the playground's GraphiQL fetcher. Queries and
// mutations go over HTTP with the headers editor's headers. Subscriptions
// go over WebSocket (graphql-transport-ws), where a browser cannot set
// headers: the token travels in connection_init's payload as
// {"authorization": "Bearer ..."}. There is one client per Authorization
// value; it connects only while a subscription runs. Another token in the
// headers editor disposes of the old client (ending what ran under the old
// token), and the next subscription connects with the new one.
export function createProcsvcFetcher() {
  // GraphiQL's HTTP fetcher sends to WebSocket whatever its options'
  // documentAST says is a subscription, and throws (it has no WebSocket
  // client) when that parse is stale: the editor held a subscription until
  // a moment ago. The operation sent is decided here, from the request's own
  // query, so the HTTP fetcher is never handed GraphiQL's parse.
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
    // The operation's own name, not GraphiQL's: a stale operationName would
    // name an operation of the previous text, which the server refuses.
    const sent = op ? { ...params, operationName: op.name?.value } : params;
    const headers = opts?.headers ?? {};
    if (op?.operation === OperationTypeNode.SUBSCRIPTION) {
      return observe(wsClientFor(authorizationOf(headers)), sent, headers);
    }
    return httpFetcher(sent, { headers });
  };
}
