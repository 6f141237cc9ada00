// Real-browser test of procsvc's GraphQL playground: a newcomer's first hour
// (issue #23). Run with plain node against a procsvc that serves
// subscriptions over WebSocket:
//
//   PLAYGROUND_URL=http://127.0.0.1:8080 PLAYGROUND_TOKEN=pms_... \
//     node web/e2e/playground.test.mjs
//
// Through harness.mjs (chromium via playwright-core; fails on any request to
// another origin, CSP violation or page error; a screenshot to $SCREENSHOT
// when set), in order:
//  1. before anything is run the result pane is empty, and the docs pane
//     says to paste a token;
//  2. with a refused token the docs pane says what the server said, a query
//     and a subscription (refused over WebSocket) show the very answer an
//     HTTP client gets for that token, and the result pane stayed empty
//     until the query ran;
//  3. with PLAYGROUND_TOKEN the docs load and the starter query runs, also
//     when it is pasted over a subscription that just ran and run in the
//     same moment, before GraphiQL re-reads the editor (it goes over HTTP,
//     as its own operation, not GraphiQL's stale subscription);
//  4. the explorer pane builds a query from the schema (ticking viewer, then
//     its name), which runs;
//  5. the token survives a reload (the query too), is nowhere but the tab's
//     sessionStorage (no cookie, nothing in localStorage), is not in another
//     tab, and "Forget token" clears it;
//  6. opening /graphql in the browser lands on the playground.
// Exits non-zero on any failure.
import {
  HEADERS_SEL,
  QUERY_SEL,
  RESULT_SEL,
  TOKEN_PLACEHOLDER,
  answerOverHTTP,
  baseURL,
  editorValue,
  log,
  main,
  parsed,
  runAndRead,
  runPlaygroundTest,
  sameJSON,
  setEditor,
  setToken,
  showPlugin,
  token,
  waitFor,
  waitForDocs,
  waitForResult,
  withoutRequestIds,
} from './harness.mjs';

const REFUSED_TOKEN = 'pms_not_a_real_token';
const TOKEN_KEY = 'procsvc.playground.token';
const SUBSCRIPTION = 'subscription { procedureEvents { kind } }';
const SUBSCRIPTION_NAME = 'Events';
const NAMED_SUBSCRIPTION = `subscription ${SUBSCRIPTION_NAME} { procedureEvents { kind } }`;

// runSubscriptionThenStop runs the subscription SUBSCRIPTION_NAME once
// GraphiQL has read it from the editor, waits until it is sent over a
// WebSocket, and stops it if it still runs (the stub backend ends it at
// once with an error; procsvc keeps it open), leaving the run button ready.
async function runSubscriptionThenStop(page, sockets) {
  await setEditor(page, QUERY_SEL, NAMED_SUBSCRIPTION);
  await waitFor(page, 'GraphiQL to read the subscription from the editor', async () => {
    const held = await parsedOperation(page);
    return held.operation === 'subscription' && held.operationName === SUBSCRIPTION_NAME;
  });
  const subscribes = () => sockets.flatMap((s) => s.sent.filter((f) => parsed(f)?.type === 'subscribe')).length;
  const before = subscribes();
  await page.click('.graphiql-execute-button');
  await waitFor(page, 'the subscription to go over a WebSocket', async () => subscribes() > before);
  const button = page.locator('.graphiql-execute-button');
  if ((await button.getAttribute('aria-label'))?.startsWith('Stop')) await button.click();
  await waitFor(page, 'the run button to be ready again', async () => (await button.getAttribute('aria-label'))?.startsWith('Execute'));
}

// parsedOperation is what GraphiQL last read from the query editor (it
// re-reads it 100 ms after an edit): the operation type of its first
// operation and the operation name it would run.
function parsedOperation(page) {
  return page.$eval(QUERY_SEL, (el) => {
    const cm = el.CodeMirror;
    const op = cm.documentAST?.definitions?.find((d) => d.kind === 'OperationDefinition');
    return { operation: op?.operation ?? null, operationName: cm.operationName ?? null };
  });
}

// replaceAndRun puts text in the query editor and clicks the run button in
// one task of the page, so that GraphiQL's re-read of the editor cannot come
// in between; it returns what GraphiQL held from the editor at the click.
function replaceAndRun(page, text) {
  return page.$eval(
    QUERY_SEL,
    (el, t) => {
      const cm = el.CodeMirror;
      cm.setValue(t);
      document.querySelector('.graphiql-execute-button').click();
      const op = cm.documentAST?.definitions?.find((d) => d.kind === 'OperationDefinition');
      return { operation: op?.operation ?? null, operationName: cm.operationName ?? null };
    },
    text,
  );
}

// tokenEverywhere reports where in the page's storage token is kept.
async function tokenEverywhere(page, context, tok) {
  const inPage = await page.evaluate(
    ([t, key]) => ({
      session: sessionStorage.getItem(key),
      localKeys: Object.keys(localStorage).filter((k) => (localStorage.getItem(k) ?? '').includes(t)),
      localSize: localStorage.length,
      cookie: document.cookie.includes(t),
    }),
    [tok, TOKEN_KEY],
  );
  const cookies = (await context.cookies()).filter((c) => c.value.includes(tok)).map((c) => c.name);
  return { ...inPage, cookies };
}

main(() =>
  runPlaygroundTest(async ({ page, context, origin, sockets, csp }) => {
    const starter = await editorValue(page, QUERY_SEL);
    for (const want of ['go run ./cmd/procsvc', 'viewer', 'totalCount']) {
      if (!starter.includes(want)) throw new Error(`starter query lacks ${JSON.stringify(want)}`);
    }
    // No identity provider configured: no Sign in button, no other origin
    // in the policy (signin.test.mjs covers the configured page).
    if ((await page.locator('button.procsvc-sign-in').count()) !== 0) throw new Error('a Sign in button with no identity provider configured');
    if (!/connect-src 'self';/.test(csp)) throw new Error(`connect-src names more than 'self' with no identity provider: ${csp}`);

    // 1. Nothing run yet: no error anywhere but where it explains itself.
    await page.waitForSelector(RESULT_SEL);
    await showPlugin(page, 'Documentation Explorer');
    await waitForDocs(page, 'why there is no schema', (t) => t.includes('Paste a token in the Headers tab') && t.includes(TOKEN_PLACEHOLDER));
    if ((await editorValue(page, RESULT_SEL)) !== '') {
      throw new Error(`the result pane shows something before anything ran:\n${await editorValue(page, RESULT_SEL)}`);
    }
    log('before the first run: an empty result pane; the docs pane says to paste a token');

    // 2. A refused token: the docs say what the server said, and a query and
    // a subscription both show the answer an HTTP client gets.
    const refused = await answerOverHTTP(REFUSED_TOKEN);
    const refusal = refused.body.errors?.[0];
    if (refused.status !== 401 || !refusal?.message || !refusal.extensions?.code) {
      throw new Error(`POST /graphql with a made-up token: ${refused.status} ${JSON.stringify(refused.body)}`);
    }
    const said = `the server said: ${refusal.message} (${refusal.extensions.code})`;
    await setToken(page, REFUSED_TOKEN);
    await waitForDocs(page, said, (t) => t.includes(`Paste a token in the Headers tab: ${said}`));
    if ((await editorValue(page, RESULT_SEL)) !== '') {
      throw new Error(`a refused schema put something in the result pane:\n${await editorValue(page, RESULT_SEL)}`);
    }
    log(`docs pane with a refused token: "Paste a token in the Headers tab: ${said}"`);

    const overQuery = await runAndRead(page, 'the refused query');
    if (!sameJSON(withoutRequestIds(overQuery), withoutRequestIds(refused.body))) {
      throw new Error(`the refused query shows ${JSON.stringify(overQuery)}, HTTP answers ${JSON.stringify(refused.body)}`);
    }
    const socketsBefore = sockets.length;
    await setEditor(page, QUERY_SEL, SUBSCRIPTION);
    const overSocket = await runAndRead(page, 'the refused subscription');
    if (!sameJSON(withoutRequestIds(overSocket), withoutRequestIds(overQuery))) {
      throw new Error(`a refused token reads differently:\n  query:        ${JSON.stringify(overQuery)}\n  subscription: ${JSON.stringify(overSocket)}`);
    }
    const init = sockets
      .slice(socketsBefore)
      .flatMap((s) => s.sent.map(parsed))
      .find((f) => f?.type === 'connection_init');
    if (init?.payload?.authorization !== `Bearer ${REFUSED_TOKEN}`) {
      throw new Error(`the subscription did not go over a WebSocket with the refused token: ${JSON.stringify(init)}`);
    }
    log(`a refused token reads the same for a query and a subscription: ${JSON.stringify(withoutRequestIds(overSocket))}`);
    await setEditor(page, QUERY_SEL, starter);

    // 3. The token: the docs load, the starter query runs, even at once
    // after a subscription ran in its place.
    await setToken(page, token);
    await waitForDocs(page, 'the schema', (t) => /Root Types/i.test(t) && /query/i.test(t));
    log('docs explorer shows the schema');
    await runSubscriptionThenStop(page, sockets);
    const graphqlResponse = page.waitForResponse(
      (r) => r.url() === `${origin}/graphql` && r.request().method() === 'POST' && /viewer/.test(r.request().postData() || ''),
    );
    graphqlResponse.catch(() => {}); // awaited below, unless a check fails first
    // Paste the starter query over the subscription and run it in the same
    // task, as a paste then Ctrl-Enter within GraphiQL's 100 ms re-read of
    // the editor would: GraphiQL still holds the subscription's parse (and
    // its operationName) when the query goes out.
    const stale = await replaceAndRun(page, starter);
    if (stale.operation !== 'subscription' || stale.operationName !== SUBSCRIPTION_NAME) {
      throw new Error(`the query ran after GraphiQL re-read the editor (it held ${JSON.stringify(stale)}): this checks nothing`);
    }
    const ranAfterSubscription = await waitForResult(page, 'the starter query run right after the subscription', (t) => t !== '');
    if (!ranAfterSubscription.includes('"viewer"') || /createFetcher|"stack"|"errors"/.test(ranAfterSubscription)) {
      throw new Error(`the starter query run right after a subscription shows:\n${ranAfterSubscription}`);
    }
    log(`the starter query run at once after the subscription ${SUBSCRIPTION_NAME} (GraphiQL still holding its parse) went over HTTP`);
    const gr = await graphqlResponse;
    const sentAuth = await gr.request().headerValue('authorization');
    if (sentAuth !== `Bearer ${token}`) throw new Error(`the query was not sent with the token (Authorization: ${sentAuth})`);
    const sentName = parsed(gr.request().postData() || '')?.operationName;
    if (sentName !== 'Overview') throw new Error(`the starter query went out as operation ${JSON.stringify(sentName)}, not Overview`);
    const answer = await gr.text();
    if (gr.status() !== 200 || /"errors"\s*:/.test(answer)) {
      throw new Error(`POST /graphql answered ${gr.status()} with errors (is PLAYGROUND_TOKEN valid?):\n${answer}`);
    }
    const result = parsed(await waitForResult(page, '"totalCount" and "viewer"', (v) => v.includes('"totalCount"') && v.includes('"viewer"')));
    if (result?.errors) throw new Error(`the starter query returned errors:\n${JSON.stringify(result)}`);
    log(`result: viewer=${JSON.stringify(result.data.viewer)} totalCount=${result.data.procedures.totalCount}`);

    // 4. The explorer builds a query by ticking a field.
    await showPlugin(page, 'GraphiQL Explorer');
    await setEditor(page, QUERY_SEL, '');
    // The explorer follows the editor a moment later: tick once it shows
    // an empty operation, not the starter query (ticking then would untick
    // the starter's viewer).
    await waitFor(page, 'the explorer to show an empty operation', () =>
      page.evaluate(() => {
        const root = document.querySelector('.graphiql-explorer-root');
        const names = [...(root?.querySelectorAll('input') ?? [])].map((i) => i.value);
        return root?.querySelector('[data-field-name="viewer"]') && !names.includes('Overview');
      }),
    );
    await page.click('.graphiql-explorer-root [data-field-name="viewer"]');
    await page.click('.graphiql-explorer-root .graphiql-explorer-viewer [data-field-name="name"]');
    await waitFor(page, 'the explorer to write a query', async () => /\bviewer\s*\{\s*name\s*\}/.test(await editorValue(page, QUERY_SEL)));
    const fromExplorer = await runAndRead(page, 'the explorer-built query');
    const built = await editorValue(page, QUERY_SEL);
    if (fromExplorer?.errors || typeof fromExplorer?.data?.viewer?.name !== 'string') {
      throw new Error(`the explorer-built query\n${built}\nanswered ${JSON.stringify(fromExplorer)}`);
    }
    log(`the explorer built ${JSON.stringify(built.replace(/\s+/g, ' ').trim())}; it answered ${JSON.stringify(fromExplorer.data)}`);

    // 5. A reload keeps the token (in this tab only); Forget token clears it.
    await waitFor(page, 'GraphiQL to store the query', () => page.evaluate((q) => localStorage.getItem('graphiql:query') === q, built));
    const introspected = page.waitForResponse((r) => /IntrospectionQuery/.test(r.request().postData() || ''));
    await page.reload();
    await page.waitForSelector(HEADERS_SEL, { state: 'visible' });
    const headersAfter = await editorValue(page, HEADERS_SEL);
    if (!headersAfter.includes(`Bearer ${token}`)) throw new Error(`the token did not survive a reload; headers: ${headersAfter}`);
    if ((await editorValue(page, QUERY_SEL)) !== built) throw new Error('the query did not survive a reload');
    if ((await introspected).status() !== 200 || (await editorValue(page, RESULT_SEL)) !== '') {
      throw new Error(`after a reload, before any run: introspection ${(await introspected).status()}, result pane ${await editorValue(page, RESULT_SEL)}`);
    }
    const kept = await tokenEverywhere(page, context, token);
    if (kept.session !== token || kept.localKeys.length > 0 || kept.cookie || kept.cookies.length > 0 || kept.localSize === 0) {
      throw new Error(`the token should be in sessionStorage only: ${JSON.stringify(kept)}`);
    }
    log(`after a reload the token is still there, in sessionStorage only (localStorage holds ${kept.localSize} entries, none with it)`);
    const refetched = page.waitForResponse((r) => /IntrospectionQuery/.test(r.request().postData() || ''));
    await page.click('.graphiql-sidebar button[aria-label="Re-fetch GraphQL schema"]');
    if ((await refetched).status() !== 200) throw new Error(`re-fetching the schema: ${(await refetched).status()}`);
    log('the re-fetch button loads the schema again');

    const other = await context.newPage();
    await other.goto(`${baseURL}/playground`);
    await other.waitForSelector(HEADERS_SEL, { state: 'visible' });
    const otherHeaders = await editorValue(other, HEADERS_SEL);
    if (!otherHeaders.includes(TOKEN_PLACEHOLDER)) throw new Error(`another tab got the token: ${otherHeaders}`);
    await other.close();
    log('another tab starts without it');

    const forget = page.locator('button.procsvc-forget-token');
    if ((await forget.textContent()) !== 'Forget token') throw new Error('no "Forget token" button');
    await Promise.all([page.waitForEvent('load'), forget.click()]);
    await page.waitForSelector(HEADERS_SEL, { state: 'visible' });
    const headersForgotten = await editorValue(page, HEADERS_SEL);
    const left = await tokenEverywhere(page, context, token);
    if (!headersForgotten.includes(TOKEN_PLACEHOLDER) || left.session !== null || left.localKeys.length > 0) {
      throw new Error(`"Forget token" left it: headers ${headersForgotten}, storage ${JSON.stringify(left)}`);
    }
    if ((await page.locator('button.procsvc-forget-token').count()) !== 0) throw new Error('"Forget token" still offered with no token');
    log('"Forget token" cleared it');

    // 6. /graphql opened in the browser lands on the playground.
    const landed = await page.goto(`${baseURL}/graphql`);
    const from = landed?.request().redirectedFrom();
    const redirect = await from?.response();
    if (page.url() !== `${baseURL}/playground` || landed.status() !== 200 || from?.url() !== `${baseURL}/graphql` || ![302, 303].includes(redirect?.status())) {
      throw new Error(`opening /graphql: ${from?.url()} ${redirect?.status()} -> ${page.url()} ${landed?.status()}`);
    }
    await page.waitForSelector('.graphiql-execute-button');
    log(`opening /graphql redirects (${redirect.status()}) to /playground`);
  }),
);
