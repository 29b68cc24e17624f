// Shared by the benchmarks: a seeded random source and the condition templates generated rules use,
// so bench/run.ts and bench/http.ts measure the same kind of tenant.

/** mulberry32: a small seeded generator, so every run generates the same rules and requests. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Conditions that read attributes of all three entities. The generated requests carry either
 * attributes that satisfy every template (team blue on both sides, role admin, level 5, a public
 * /shared/ path, an address in 10/8) or attributes that satisfy none, so each outcome is known.
 */
export const CONDITIONS = [
  'principal.team == resource.team',
  '"admin" in principal.roles || resource.owner == principal.id',
  'principal.level >= 3 && !(resource.classification in ["secret", "top-secret"])',
  'resource.path.startsWith("/shared/") && cidr("10.0.0.0/8").containsIP(context.ipAddress)',
];
