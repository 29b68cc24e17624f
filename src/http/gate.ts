// How much the upload receivers hold at once (issue 23): uploads whose body is being received or
// waits for the uploads thread, and their bytes. Past either limit an upload is answered 503 with
// Retry-After before its body is read (OPA retries status reports and decision logs), rather than
// queued without bound: a flood costs the flood its answers, never the service its memory.

/** Uploads held at once: a fleet of 1,000 OPAs holds a few at a time, a burst after a rollout a few hundred. */
export const MAX_UPLOADS_HELD = 256;
/** Bytes of upload bodies held at once, unless one upload may be larger (--max-upload-bytes). */
export const MAX_BYTES_HELD = 32 * 1024 * 1024;

/** One upload's place. */
export interface UploadTicket {
  /** Counts `bytes` more of its body; false once the bodies held pass the limit (the upload is then refused). */
  hold(bytes: number): boolean;
  /** Gives the place and its bytes back; again is a no-op. */
  release(): void;
}

export interface UploadGate {
  /** A place for an upload that declares `declaredBytes` (its Content-Length, else 0), or undefined when full. */
  enter(declaredBytes: number): UploadTicket | undefined;
}

/** A gate for `maxUploads` uploads and `maxBytes` of bodies at once. */
export function createUploadGate(maxUploads: number, maxBytes: number): UploadGate {
  let uploads = 0;
  let bytes = 0;
  return {
    enter(declaredBytes) {
      if (uploads >= maxUploads || bytes + declaredBytes > maxBytes) return undefined;
      uploads++;
      bytes += declaredBytes;
      let held = declaredBytes;
      let received = 0;
      let released = false;
      return {
        hold(more) {
          received += more;
          if (received > held) {
            bytes += received - held;
            held = received;
          }
          return bytes <= maxBytes;
        },
        release() {
          if (released) return;
          released = true;
          uploads--;
          bytes -= held;
        },
      };
    },
  };
}
