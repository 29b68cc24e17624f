// A minimal HTTP/1.1 response reader for the paced load generator: enough for the servers measured
// here (Content-Length bodies, bodiless 304s, and chunked bodies should OPA ever send one). Node's
// http client costs about as much CPU per request as the servers under test, which made the load
// generator fall behind its own schedule; this keeps its cost to a few microseconds.

const HEADER_END = Buffer.from('\r\n\r\n');
const CHUNK_END = Buffer.from('0\r\n\r\n');

/** Feeds bytes of one connection; calls `onResponse(status)` for each complete response. */
export function responseReader(onResponse: (status: number) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return function read(chunk) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    for (;;) {
      const headEnd = pending.indexOf(HEADER_END);
      if (headEnd < 0) return;
      const head = pending.toString('latin1', 0, headEnd);
      const status = Number(head.slice(9, 12));
      const bodyStart = headEnd + 4;
      let end: number;
      if (status === 304 || status === 204 || (status >= 100 && status < 200)) {
        end = bodyStart;
      } else if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
        // Good enough for JSON bodies: the last chunk is the first "0\r\n\r\n" after the headers.
        const last = pending.indexOf(CHUNK_END, bodyStart);
        if (last < 0) return;
        end = last + CHUNK_END.length;
      } else {
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        if (!length) throw new Error(`response without a length: ${head.slice(0, 200)}`);
        end = bodyStart + Number(length[1]);
      }
      if (pending.length < end) return;
      pending = pending.subarray(end);
      onResponse(status);
    }
  };
}

/** The bytes of a request, built once and written as they are for every send. */
export function requestBytes(method: string, path: string, headers: Readonly<Record<string, string>>, body: string | undefined): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body ?? ''}`);
}
