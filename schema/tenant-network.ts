// Tenant network policy in the graph: the egress allowlist (platform admins). Filled in by issue 11.
export {};
