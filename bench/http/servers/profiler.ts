// CPU profiling on demand inside a server child, through the inspector: only the window under load
// is profiled, not startup (building 10,000 rules) or warm-up.
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';

const session = new Session();
let connected = false;

export async function startProfile(): Promise<null> {
  if (!connected) {
    session.connect();
    connected = true;
  }
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  return null;
}

/** Stops the profile started by startProfile and writes it as a .cpuprofile file. */
export async function stopProfile(file: string): Promise<null> {
  const { profile } = await session.post('Profiler.stop');
  await writeFile(file, JSON.stringify(profile));
  return null;
}
