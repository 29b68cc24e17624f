// The load generator child (started on its own core by bench/http.ts): one process for every run,
// so its JIT is warm and its cost is the same for every variant.
import { saturateWithAutocannon } from './autocannon.ts';
import { paced, saturate } from './generator.ts';
import { serveCommands } from './ipc.ts';
import type { LoadResult, LoadSpec } from './load.ts';

export type LoadCommands = {
  saturate: { arg: LoadSpec; result: LoadResult };
  paced: { arg: LoadSpec & { rate: number }; result: LoadResult };
};

/** Which tool drives the saturation runs: ours unless BENCH_LOADGEN=autocannon. */
export const SATURATION_TOOL = process.env['BENCH_LOADGEN'] === 'autocannon' ? 'autocannon' : 'bench/http/generator.ts';

if (process.argv[1] === import.meta.filename) {
  serveCommands<LoadCommands>(
    { saturate: SATURATION_TOOL === 'autocannon' ? saturateWithAutocannon : saturate, paced },
    { pid: process.pid },
  );
}
