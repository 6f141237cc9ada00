// The side panes: GraphiQL's docs explorer and the query-building explorer
// (@graphiql/plugin-explorer), each replaced by the reason there is no
// schema while there is none (schema.js).
import { DocsFilledIcon, DocsIcon, Spinner, usePluginStore } from '@graphiql/react';
import { DocExplorer } from '@graphiql/plugin-doc-explorer';
import { explorerPlugin } from '@graphiql/plugin-explorer';
import { schemaState } from './schema.js';
import { useValue } from './state.js';

// SchemaStatus fills a pane titled title while the schema is loading or
// missing, in the docs explorer's own layout.
function SchemaStatus({ title }) {
  const { status, reason } = useValue(schemaState);
  return (
    <section className="graphiql-doc-explorer procsvc-schema-status" aria-label={title} data-status={status}>
      <div className="graphiql-doc-explorer-header">
        <div className="graphiql-doc-explorer-header-content">
          <div className="graphiql-doc-explorer-title">{title}</div>
        </div>
      </div>
      <div className="graphiql-doc-explorer-content">
        {status === 'loading' ? <Spinner /> : <p className="procsvc-schema-reason">{reason}</p>}
      </div>
    </section>
  );
}

function withSchema(title, Content) {
  return function PaneWhenSchema() {
    const { status } = useValue(schemaState);
    return status === 'ready' ? <Content /> : <SchemaStatus title={title} />;
  };
}

// DOCS_PLUGIN is GraphiQL's docs explorer (its reference plugin: type names
// in the editors open it), under the title and icons GraphiQL gives it.
export const DOCS_PLUGIN = {
  title: 'Documentation Explorer',
  icon: function DocsPluginIcon() {
    const { visiblePlugin } = usePluginStore();
    return visiblePlugin === DOCS_PLUGIN ? <DocsFilledIcon /> : <DocsIcon />;
  },
  content: withSchema('Docs', DocExplorer),
};

// EXPLORER_PLUGIN builds a query by ticking the schema's fields, for people
// who do not know the schema yet. Its attribution links are left out: they
// would be the only links on the page to another site.
const explorer = explorerPlugin({ showAttribution: false });
export const EXPLORER_PLUGIN = { ...explorer, content: withSchema('Explorer', explorer.content) };
