/** Builds web/dist when it is missing or older than its sources; true when it built. */
export function ensureBuilt(): boolean;
export function sourceHash(): string;
/** Files outside web/ (repository-relative) that the bundle imports; part of the source hash. */
export const OUTSIDE_SOURCES: readonly string[];
