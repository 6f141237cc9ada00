// Real-browser test of procsvc's GraphQL playground, run with plain node:
//
//   PLAYGROUND_URL=http://127.0.0.1:8080 PLAYGROUND_TOKEN=procsvc_... \
//     node web/e2e/playground.test.mjs
//
// Through harness.mjs (chromium via playwright-core; fails on any request to
// another origin, CSP violation or page error; saves a screenshot to
// $SCREENSHOT), it opens $PLAYGROUND_URL/playground, pastes the token into
// the headers editor, runs the starter query with GraphiQL's execute button,
// waits for the result to show "viewer" and "totalCount", and checks that the
// docs explorer got the schema. Exits non-zero on any failure.
import { QUERY_SEL, RESULT_SEL, editorValue, log, main, runPlaygroundTest, setToken, token, waitForResult } from './harness.mjs';

main(() =>
  runPlaygroundTest(async ({ page, origin }) => {
    const queryBefore = await editorValue(page, QUERY_SEL);
    for (const want of ['go run ./cmd/procsvc', 'viewer', 'totalCount']) {
      if (!queryBefore.includes(want)) throw new Error(`starter query lacks ${JSON.stringify(want)}`);
    }

    // Paste the token where the placeholder is, as a person would.
    await setToken(page, token);
    log('token set in the headers editor');

    // Run the starter query with the execute button.
    const graphqlResponse = page.waitForResponse(
      (r) => r.url() === `${origin}/graphql` && r.request().method() === 'POST' && !/IntrospectionQuery/.test(r.request().postData() || ''),
    );
    await page.click('.graphiql-execute-button');
    const gr = await graphqlResponse;
    log(`POST /graphql answered ${gr.status()}`);
    const sentAuth = await gr.request().headerValue('authorization');
    if (sentAuth !== `Bearer ${token}`) throw new Error(`the query was not sent with the token (Authorization: ${sentAuth})`);
    const answer = await gr.text();
    if (gr.status() !== 200 || /"errors"\s*:/.test(answer)) {
      throw new Error(`POST /graphql answered ${gr.status()} with errors (is PLAYGROUND_TOKEN valid?):\n${answer}`);
    }

    await waitForResult(page, '"totalCount" and "viewer"', (v) => v.includes('"totalCount"') && v.includes('"viewer"'));
    const result = await editorValue(page, RESULT_SEL);
    const parsed = JSON.parse(result);
    if (parsed.errors) throw new Error(`the starter query returned errors:\n${result}`);
    log(`result: viewer=${JSON.stringify(parsed.data.viewer)} totalCount=${parsed.data.procedures.totalCount}`);

    // The docs explorer is fed by introspection, which now has the token.
    await page.click('.graphiql-sidebar button[aria-label="Show Documentation Explorer"]');
    await page
      .waitForFunction(() => {
        const el = document.querySelector('.graphiql-doc-explorer');
        return el && /Root Types/i.test(el.textContent) && /query/i.test(el.textContent);
      })
      .catch(async (err) => {
        const got = await page.$eval('.graphiql-plugin', (el) => el.textContent).catch(() => '(no plugin pane)');
        throw new Error(`the docs explorer never showed the schema: ${err.message}\ndocs pane: ${got.slice(0, 500)}`);
      });
    log('docs explorer shows the schema');
  }),
);
