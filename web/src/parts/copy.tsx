// "Copy as GraphQL" and "Copy as CLI" for what a view shows, and the view as a curl command for the
// views the CLI has no command for (it has no generic query one).
import { stringifyDocument } from '@urql/core';
import { useState } from 'preact/hooks';

export function CopyAs({
  document,
  variables,
  cli,
}: {
  document: Parameters<typeof stringifyDocument>[0];
  variables?: object;
  cli: string;
}) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async (what: string, text: string) => {
    await navigator.clipboard?.writeText(text).catch(() => undefined);
    setCopied(what);
    setTimeout(() => setCopied(null), 1500);
  };
  const graphqlText = `${stringifyDocument(document)}${variables ? `\n# variables: ${JSON.stringify(variables)}` : ''}`;
  return (
    <div class="copy-as">
      <button type="button" onClick={() => copy('GraphQL', graphqlText)}>
        Copy as GraphQL
      </button>
      <button type="button" onClick={() => copy('CLI', cli)}>
        Copy as CLI
      </button>
      <span role="status">{copied ? `Copied as ${copied}` : ''}</span>
    </div>
  );
}

/** A shell command sending a document to the gateway (FAIRWAY_SERVER and FAIRWAY_TOKEN as the CLI reads them). */
export function curlOf(document: Parameters<typeof stringifyDocument>[0], variables: object = {}): string {
  const body = JSON.stringify({ query: stringifyDocument(document).replace(/\s+/g, ' ').trim(), variables });
  const quoted = `'${body.replace(/'/g, `'\\''`)}'`;
  return `curl -s "\${FAIRWAY_SERVER:-http://localhost:4000/graphql}" -H "authorization: Bearer $FAIRWAY_TOKEN" -H 'content-type: application/json' -d ${quoted}`;
}
