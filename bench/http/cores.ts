// The two cores of the benchmark: every server variant runs on one, the load generator (and the
// benchmark's own process) on the other, so a server never shares its core with its load.
export const SERVER_CORE = 0;
export const LOADGEN_CORE = 1;
