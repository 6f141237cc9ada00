// procsvc serves no GraphQL subscriptions yet, so the playground ships no
// WebSocket client: @graphiql/toolkit only reaches for graphql-ws when given a
// subscriptionUrl, which the playground never passes.
export function createClient() {
  throw new Error('procsvc serves no GraphQL subscriptions');
}
