// A process of its own that times decisions (POST /authorization) against a service, one at a time
// on one keep-alive connection, one started every PACE_MS (at once when the last came back late),
// so the figures say how long a decision waited whatever else the service was doing. Started by
// test/support/flood.ts; commands over the IPC channel:
//   { start: true }            start timing (drops earlier samples)
//   { stop: true }             stop, answer { samples } once the decision in flight is back
//   { count: n }               answer { samples } once n have been timed since start (keeps timing)
//   node test/support/prober.ts <api url> <api key>
const [url, apiKey] = process.argv.slice(2);
if (!url || !apiKey || !process.send) throw new Error('usage: node test/support/prober.ts <api url> <api key>, forked with IPC');

const PACE_MS = 2;
const body = JSON.stringify({
  subject: { type: 'user', id: 'alice', properties: { team: 'blue' } },
  action: 'read',
  resource: { type: 'document', id: 'd1', properties: { team: 'blue' } },
});

let samples: number[] = [];
let running = false;
let loop: Promise<void> = Promise.resolve();
let waiting: { n: number; answer: () => void } | undefined;

async function decide(): Promise<void> {
  const res = await fetch(`${url}/authorization`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
    body,
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`POST /authorization answered ${res.status}`);
}

async function run(): Promise<void> {
  while (running) {
    const started = performance.now();
    await decide();
    samples.push(performance.now() - started);
    if (waiting && samples.length >= waiting.n) {
      waiting.answer();
      waiting = undefined;
    }
    const rest = started + PACE_MS - performance.now();
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
}

const reply = (message: unknown): void => {
  process.send?.(message);
};

process.on('message', (m: { start?: true; stop?: true; count?: number }) => {
  if (m.start) {
    samples = [];
    if (!running) {
      running = true;
      loop = run().catch((err: unknown) => {
        running = false;
        reply({ error: err instanceof Error ? err.message : String(err) });
      });
    }
  } else if (m.stop) {
    running = false;
    void loop.then(() => reply({ samples }));
  } else if (m.count !== undefined) {
    const n = m.count;
    waiting = { n, answer: () => reply({ samples: [...samples] }) };
    if (samples.length >= n) {
      waiting.answer();
      waiting = undefined;
    }
  }
});
process.on('disconnect', () => process.exit(0));
reply({ ready: true });
