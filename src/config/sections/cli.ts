import { z } from 'zod';
import { section } from '../section.js';

/**
 * Variables the command-line tools read (src/cli/tenant/context.ts, src/cli/fairway.ts), not
 * the server: documented with the others, never part of `load()` (a server does not fail on
 * them, nor does it hold a client's token). The tools read them where flags take precedence.
 */
export const cliSection = section({
  key: 'cli',
  title: 'Command-line tools (not the server)',
  description:
    'Read by the `fairway` client commands and `fairway convert-philly`, never by the server. A `--server`, `--token`, `--tenant` or `--philly-dir` flag wins over its variable.',
  variables: {
    FAIRWAY_SERVER: z
      .string()
      .optional()
      .describe("The GraphQL endpoint the client commands call (over the login file's).")
      .meta({ typeText: 'URL', defaultText: "the login file's, else `http://localhost:4000/graphql`" }),
    FAIRWAY_TOKEN: z
      .string()
      .optional()
      .describe("The API token they send (over the login file's, which is only sent to its own server).")
      .meta({ defaultText: "the login file's" }),
    FAIRWAY_TENANT: z
      .string()
      .optional()
      .describe('The tenant slug commands act in when the caller is in several.'),
    FAIRWAY_CONFIG_DIR: z
      .string()
      .optional()
      .describe('Folder of the login file (`credentials.json`).')
      .meta({ typeText: 'folder path', defaultText: '`$XDG_CONFIG_HOME/fairway`, else `~/.config/fairway`' }),
    FAIRWAY_PHILLY_DIR: z
      .string()
      .optional()
      .describe(
        '`fairway convert-philly`: the folder holding `philly-2017-09-10.csv` and `philly-vc-nodes.csv`.',
      )
      .meta({ typeText: 'folder path', defaultText: '`../shared/traces/philly` beside the repository' }),
  },
  resolve: () => undefined,
});
