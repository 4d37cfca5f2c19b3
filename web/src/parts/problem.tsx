// A refusal in the API's own words, for every page that shows one.

type ErrorLike = { graphQLErrors: readonly { message: string }[]; message: string };

/** The API's own words for a refusal (its first GraphQL error), else the transport's. */
export function problemOf(error: ErrorLike | null | undefined): string | null {
  if (!error) return null;
  return error.graphQLErrors[0]?.message ?? error.message;
}

export function Problem({ error }: { error: ErrorLike | string | null | undefined }) {
  const text = typeof error === 'string' ? error : problemOf(error);
  return text ? <p role="alert">{text}</p> : null;
}
