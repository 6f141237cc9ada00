// The playground loads the schema itself, rather than through GraphiQL's
// own introspection, so that it can say why there is none: GraphiQL shows
// a failed introspection as an error in the result pane before anything
// was run, and as a bare "Error fetching schema" in the docs. Here a
// failure becomes a reason (schemaState.reason) that the docs and explorer
// panes show, and a token that changes in the headers editor loads the
// schema again (see main.jsx).
import { buildClientSchema, getIntrospectionQuery } from 'graphql';
import { GRAPHQL_PATH, postGraphQL } from './fetcher.js';
import { createValue } from './state.js';
import { TOKEN_PLACEHOLDER, authorizationOf } from './token.js';

// procsvc answers graphql-js's standard introspection query as it is: its
// chain of nine ofType levels fits the depth limit because, in
// introspection, those levels add no depth (docs/api.md#introspection).
export const INTROSPECTION_QUERY = getIntrospectionQuery();

// schemaState is { status, schema, reason }: status 'loading', 'ready'
// (schema set) or 'failed' (schema null, reason says why, for a person).
export const schemaState = createValue({ status: 'loading', schema: null, reason: '' });

const PASTE_TOKEN = `Paste a token in the Headers tab, over ${TOKEN_PLACEHOLDER}: the docs and the explorer load once the server accepts it. No token yet? Start procsvc on an empty database (go run ./cmd/procsvc): it prints one.`;

// DISCONNECTED is what each reason of a disconnected token means and what to
// do about it (docs/api.md#why-a-token-was-disconnected): the code's own
// message is the interface's fixed text, which cannot say which applies.
const DISCONNECTED = {
  token_revoked: 'an admin revoked this one (ask an admin for a new token)',
  token_expired: 'this one has expired (ask an admin for a new token)',
  member_removed: "this one's member was removed from the workspace, and their tokens stopped working with them (use another member's token)",
};

// reasonOf says why an introspection answer holds no schema: what the
// server said, with the reason it gave for a disconnected token
// (extensions.reason), and what to do about a refused token.
export function reasonOf(body) {
  const first = Array.isArray(body?.errors) ? body.errors[0] : undefined;
  if (!first) return `The server answered without a schema: ${JSON.stringify(body).slice(0, 300)}`;
  const code = first.extensions?.code;
  const why = typeof first.extensions?.reason === 'string' ? first.extensions.reason : '';
  const said = `the server said: ${first.message}${code ? ` (${code}${why ? `: ${why}` : ''})` : ''}`;
  if (code === 'disconnected') {
    const meaning = Object.prototype.hasOwnProperty.call(DISCONNECTED, why) ? `${DISCONNECTED[why]}; ` : '';
    return `Paste another token in the Headers tab: ${meaning}${said}`;
  }
  if (code === 'unauthenticated') return `Paste a token in the Headers tab: ${said}`;
  return `The schema did not load: ${said}`;
}

let generation = 0;

// loadSchema introspects with the headers editor's text, unless it cannot
// work yet (headers that are not JSON, the placeholder still in place of a
// token): then it only says so. Only the latest call's outcome is kept; it
// resolves to true when that outcome is a schema (the headers' token works).
export async function loadSchema(headersText) {
  const gen = ++generation;
  const fail = (reason) => {
    if (gen === generation) schemaState.set({ status: 'failed', schema: null, reason });
    return false;
  };
  let headers;
  try {
    headers = JSON.parse(headersText?.trim() || '{}');
  } catch {
    return fail('The Headers tab is not valid JSON: fix it, and the schema loads with the token in it.');
  }
  if (!headers || typeof headers !== 'object' || Array.isArray(headers)) {
    return fail('The Headers tab must hold a JSON object, e.g. {"Authorization": "Bearer <your token>"}.');
  }
  if (authorizationOf(headers).includes(TOKEN_PLACEHOLDER)) {
    return fail(PASTE_TOKEN);
  }
  schemaState.set((s) => ({ ...s, status: 'loading' }));
  let body;
  try {
    body = await postGraphQL({ query: INTROSPECTION_QUERY, operationName: 'IntrospectionQuery' }, { headers });
  } catch (err) {
    return fail(`The schema did not load: ${GRAPHQL_PATH} could not be reached (${err?.message ?? err}).`);
  }
  if (gen !== generation) return false;
  if (!body?.data?.__schema) return fail(reasonOf(body));
  let schema;
  try {
    schema = buildClientSchema(body.data);
  } catch (err) {
    return fail(`The schema did not load: the server's introspection answer is not a schema (${err?.message ?? err}).`);
  }
  schemaState.set({ status: 'ready', schema, reason: '' });
  return true;
}
