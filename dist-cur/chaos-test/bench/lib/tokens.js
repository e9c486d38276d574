/** The service runs with authentication on, as in production; each client uses its role's token. */
export const BENCH_TOKENS = [
    { role: 'admin', token: 'bench-admin-token-0123456789' },
    { role: 'worker', token: 'bench-worker-token-0123456789' },
    { role: 'producer', token: 'bench-producer-token-0123456789' },
];
export function tokenOf(role) {
    return BENCH_TOKENS.find((t) => t.role === role).token;
}
//# sourceMappingURL=tokens.js.map