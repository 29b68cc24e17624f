// The receivers under a flood of hostile uploads (issue 23), as a replica runs: a real service
// process with the Deployment's own heap flag, decisions timed from another process meanwhile, and
// 1, 4 and 16 uploads at once that inflate to JSON nested two million deep or a million wide. Run
// on its own after the main suite (make test-timing): it measures, so it needs the cores to itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deploymentLimits,
  floodLines,
  measureFloods,
  startProber,
  startServiceProcess,
  type FloodFigures,
  type Prober,
  type ServiceProcess,
} from '../support/flood.ts';

const limits = deploymentLimits();
/** No decision may wait longer than this, whatever the uploads (the service's own goal under change). */
const MAX_DECISION_MS = 50;
/** Peak resident memory stays under this share of the pod's limit. */
const PEAK_SHARE = 0.75;
/** Afterwards, resident memory comes back within this of where it started. */
const SETTLE_BYTES = 48 * 2 ** 20;

let service: ServiceProcess;
let prober: Prober;
let figures: FloodFigures;

beforeAll(async () => {
  service = await startServiceProcess(limits.nodeOptions);
  prober = await startProber(service.apiUrl);
  figures = await measureFloods(service, prober, {
    stages: [1, 4, 16],
    samplesPerStage: 500,
    stageBudgetMs: 20_000,
    waves: 4,
    again: { overMs: MAX_DECISION_MS, times: 2 },
    quietSamples: 500,
    settleBytes: SETTLE_BYTES,
    settleMs: 20_000,
    progress: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${floodLines(figures, limits).join('\n')}\n`);
});

afterAll(async () => {
  prober?.close();
  await service?.stop();
});

describe('a replica flooded with uploads nested millions deep or wide', () => {
  it('refuses every one with a 4xx that names the problem, and still records the valid reports sent meanwhile', () => {
    for (const stage of figures.stages) {
      expect(Object.keys(stage.statuses).sort(), `${stage.parallel} at once`).toEqual(['400', '413']);
      expect(Object.keys(stage.valid), `${stage.parallel} at once`).toEqual(['200']);
    }
  });

  it(`keeps answering decisions within ${MAX_DECISION_MS} ms, at 1, 4 and 16 uploads at once`, () => {
    // A stage over the bound was run again (twice at most): it fails only when every attempt was over.
    const best = [1, 4, 16].map((n) => {
      const attempts = figures.stages.filter((s) => s.parallel === n).map((s) => s.latency.maxMs);
      return [n, Math.round(Math.min(...attempts))] as const;
    });
    expect(
      best.filter(([, m]) => m > MAX_DECISION_MS),
      `quiet max ${figures.quiet.maxMs.toFixed(1)} ms`,
    ).toEqual([]);
  });

  it("keeps its memory well inside the pod's limit, and gives it back afterwards", () => {
    expect(figures.memory.peakBytes).toBeLessThanOrEqual(PEAK_SHARE * limits.memoryLimitBytes);
    expect(figures.memory.afterBytes).toBeLessThanOrEqual(figures.memory.startBytes + SETTLE_BYTES);
  });
});
