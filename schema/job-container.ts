// Filled in by the issue-10 work on this part.
export {};
