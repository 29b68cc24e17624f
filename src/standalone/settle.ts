// When a manifest file is read again, and when its new content is used: an unchanged stat older than
// the racy window reuses the last read, and new content waits to hold still for the settle interval,
// so a file caught mid-write never applies.
import { stat } from 'node:fs/promises';
import type { ManifestRead, ParsedObject } from './parse.ts';
import type { FileState, SourceView } from './view.ts';

/** The racy window on a filesystem whose timestamps have sub-second precision. */
const FINE_RACY_WINDOW_MS = 50;

/** What the source knows of `file`, created empty the first time it is seen. */
export function fileStateOf(v: SourceView, file: string): FileState {
  let fs = v.fileStates.get(file);
  if (!fs) {
    fs = { last: undefined, applied: undefined, pending: undefined };
    v.fileStates.set(file, fs);
  }
  return fs;
}

/** Reads a file, or reuses the last read when its stat is unchanged and older than the racy window. */
export async function readOrReuse(
  v: SourceView,
  file: string,
  source: string,
  fs: FileState,
  scanStartedMs: number,
): Promise<{ read: ManifestRead; objects: ParsedObject[] }> {
  const st = await stat(file);
  const stamp = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  const changedMs = Math.max(st.mtimeMs, st.ctimeMs);
  // Timestamps with a fraction of a second come from a clock fine enough that an unchanged stat
  // means unchanged bytes once a few milliseconds passed; whole seconds may hide a second write.
  const window = st.mtimeMs % 1000 === 0 && st.ctimeMs % 1000 === 0 ? v.racyWindowMs : Math.min(v.racyWindowMs, FINE_RACY_WINDOW_MS);
  if (fs.last && fs.last.stamp === stamp && changedMs < scanStartedMs - window) return fs.last;
  const got = await v.reader.read(file, source);
  fs.last = { stamp, ...got };
  return got;
}

/**
 * Whether a file's content, as just read, is used now. It is when it is the content in force, or
 * has held still for the settle interval; otherwise the file keeps what it had.
 */
export function settled(v: SourceView, fs: FileState, read: ManifestRead, nowMs: number): boolean {
  if (read.hash === fs.applied) return true;
  if (v.settleMs === 0) return true;
  if (fs.pending?.hash === read.hash) {
    if (nowMs - fs.pending.sinceMs >= v.settleMs) return true;
    v.scheduleRescan(fs.pending.sinceMs + v.settleMs - nowMs);
    return false;
  }
  // At start, a file nobody touched for the settle interval is as settled as it gets.
  const quietMs = nowMs - Math.max(read.stamp.mtimeMs, read.stamp.ctimeMs);
  if (v.firstScan && fs.applied === undefined && quietMs >= v.settleMs) return true;
  fs.pending = { hash: read.hash, sinceMs: nowMs };
  v.scheduleRescan(v.settleMs);
  return false;
}
