// The simulation report: its JSON form (report-json.ts) and its renderings as terminal text
// (report-terminal.ts), an HTML page (report-html.ts) and Markdown (report-markdown.ts), which share the
// cells of report-cells.ts. This file re-exports what callers import from it.
export { fmtDuration } from './report-cells.js';
export { esc, fillHtml, replayHtml } from './report-html.js';
export type { FillReport, FillRun, ReplayReport, Report, ReportInputs } from './report-json.js';
export { fillRun, reportJson } from './report-json.js';
export { fillMarkdown, replayMarkdown } from './report-markdown.js';
export { fillTerminal, replayTerminal, table } from './report-terminal.js';
