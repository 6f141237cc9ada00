// Real-browser test of how procsvc's playground words a token the server
// disconnected (issue #34): revoked, expired, or its member removed. The
// server's body keeps the interface's fixed message and says which in
// extensions.reason, and a WebSocket's close reason does too
// (docs/api.md#why-a-token-was-disconnected). Run with plain node against
// procsvc, with an ADMIN's token (the test makes the tokens it refuses):
//
//   PLAYGROUND_URL=http://127.0.0.1:8080 PLAYGROUND_TOKEN=pms_... \
//     node web/e2e/refusal.test.mjs
//
// Through harness.mjs (chromium via playwright-core; fails on any request to
// another origin, CSP violation or page error), for each of a revoked
// token, an expired one and a removed member's:
//  1. pasted into the headers editor, the docs pane names the reason, says
//     what it means and what to do, and quotes the server;
//  2. a query (HTTP) and a subscription (WebSocket, refused at
//     connection_init) both show, in the result pane, the very answer an
//     HTTP client gets for that token, reason included.
// Last, a subscription running with a good token is cut when an admin
// revokes it (the server closes the WebSocket 4403), and the result pane
// shows the revocation's reason. Exits non-zero on any failure.
import {
  QUERY_SEL,
  RESULT_SEL,
  answerOverHTTP,
  graphql,
  log,
  main,
  parsed,
  runAndRead,
  runPlaygroundTest,
  sameJSON,
  setEditor,
  setToken,
  showPlugin,
  waitFor,
  waitForDocs,
  waitForResult,
  withoutRequestIds,
} from './harness.mjs';

const QUERY = '{ viewer { name } }';
const SUBSCRIPTION = 'subscription { procedureEvents { kind } }';

// How far ahead the expiring token's expiresAt is set (it must be in the
// future when it is made): it expires while the other two are checked, and
// the test waits for the server to refuse it before checking it.
const EXPIRY_MS = 3000;

// What the docs pane must say for each reason, besides quoting the server.
const MEANS = {
  token_revoked: /revoked/,
  token_expired: /expired/,
  member_removed: /member was removed/,
};

async function createToken(input) {
  const { createToken } = await graphql('mutation($in: CreateTokenInput!) { createToken(input: $in) { secret token { id } } }', { in: input });
  return { id: createToken.token.id, secret: createToken.secret };
}

// disconnection waits until the server refuses secret as disconnected for
// reason and returns that answer (status and body).
async function disconnection(page, secret, reason) {
  let answer;
  await waitFor(page, `the server to refuse the token as disconnected (${reason})`, async () => {
    answer = await answerOverHTTP(secret);
    return answer.body.errors?.[0]?.extensions?.code === 'disconnected';
  });
  const first = answer.body.errors[0];
  if (answer.status !== 400 || first.extensions.reason !== reason || answer.body.data !== undefined) {
    throw new Error(`POST /graphql with the ${reason} token: ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  return answer;
}

function connectionInitOf(sockets, secret) {
  return sockets.some((s) =>
    s.sent.some((f) => {
      const m = parsed(f);
      return m?.type === 'connection_init' && m.payload?.authorization === `Bearer ${secret}`;
    }),
  );
}

// checkRefused pastes secret and checks the docs pane and the result pane
// of a query and a subscription.
async function checkRefused(page, sockets, secret, reason) {
  const refused = await disconnection(page, secret, reason);
  const said = `the server said: ${refused.body.errors[0].message} (disconnected: ${reason})`;
  await setToken(page, secret);
  await waitForDocs(page, `the reason ${reason}`, (t) => t.includes('Paste another token in the Headers tab: ') && MEANS[reason].test(t) && t.includes(said));
  log(`${reason}: the docs pane says "${(await page.$eval('.procsvc-schema-reason', (el) => el.textContent)).replace(said, 'the server said: … (disconnected: ' + reason + ')')}"`);

  const want = withoutRequestIds(refused.body);
  await setEditor(page, QUERY_SEL, QUERY);
  const overHTTP = await runAndRead(page, `the ${reason} token's refused query`);
  if (!sameJSON(withoutRequestIds(overHTTP), want)) {
    throw new Error(`${reason}: the query shows ${JSON.stringify(overHTTP)}, HTTP answers ${JSON.stringify(refused.body)}`);
  }
  await setEditor(page, QUERY_SEL, SUBSCRIPTION);
  const overSocket = await runAndRead(page, `the ${reason} token's refused subscription`);
  if (!sameJSON(withoutRequestIds(overSocket), want)) {
    throw new Error(`${reason}: the subscription shows ${JSON.stringify(overSocket)}, HTTP answers ${JSON.stringify(refused.body)}`);
  }
  if (!connectionInitOf(sockets, secret)) throw new Error(`${reason}: the subscription did not go over a WebSocket with that token`);
  log(`${reason}: a query and a subscription show extensions.reason ${JSON.stringify(overSocket.errors[0].extensions.reason)}`);
}

main(() =>
  runPlaygroundTest(async ({ page, sockets }) => {
    // The expiring one first, so that it expires while the others are checked.
    const expiring = await createToken({ name: 'playground e2e: expiring', expiresAt: new Date(Date.now() + EXPIRY_MS).toISOString() });
    const revoked = await createToken({ name: 'playground e2e: revoked' });
    await graphql('mutation($id: ID!) { revokeToken(id: $id) { id } }', { id: revoked.id });
    const { addMember } = await graphql('mutation($in: AddMemberInput!) { addMember(input: $in) { id } }', {
      in: { name: 'Leaving member', email: `leaving-${Date.now()}@playground-e2e.example`, role: 'MEMBER' },
    });
    const removed = await createToken({ memberId: addMember.id, name: 'playground e2e: removed member' });
    await graphql('mutation($id: ID!) { removeMember(id: $id) { id } }', { id: addMember.id });

    await showPlugin(page, 'Documentation Explorer');
    await checkRefused(page, sockets, revoked.secret, 'token_revoked');
    await checkRefused(page, sockets, removed.secret, 'member_removed');
    await checkRefused(page, sockets, expiring.secret, 'token_expired');

    // A subscription cut by a revocation while it runs.
    const live = await createToken({ name: 'playground e2e: revoked while subscribed' });
    await setToken(page, live.secret);
    await waitForDocs(page, 'the schema', (t) => /Root Types/i.test(t));
    await setEditor(page, QUERY_SEL, SUBSCRIPTION);
    await setEditor(page, RESULT_SEL, '');
    await page.click('.graphiql-execute-button');
    await waitFor(page, 'the subscription to be acknowledged', async () =>
      sockets.some(
        (s) =>
          s.sent.some((f) => parsed(f)?.type === 'connection_init' && parsed(f).payload?.authorization === `Bearer ${live.secret}`) &&
          s.sent.some((f) => parsed(f)?.type === 'subscribe') &&
          s.received.some((f) => parsed(f)?.type === 'connection_ack'),
      ),
    );
    await graphql('mutation($id: ID!) { revokeToken(id: $id) { id } }', { id: live.id });
    const refused = await disconnection(page, live.secret, 'token_revoked');
    const shown = await waitForResult(page, 'the revocation of the running subscription', (t) => parsed(t) !== undefined);
    if (!sameJSON(withoutRequestIds(parsed(shown)), withoutRequestIds(refused.body))) {
      throw new Error(`the subscription cut by a revocation shows ${shown}, HTTP answers ${JSON.stringify(refused.body)}`);
    }
    log('a subscription cut by a revocation shows extensions.reason "token_revoked"');
  }),
);
