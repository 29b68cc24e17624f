// The OPA configuration we print, against the service's own limits (src/opa meets src/config here).
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readConfig } from '../src/config.ts';
import { DECISION_LOG_CHUNK_BYTES, opaConfig } from '../src/opa/index.ts';

const printed = (): { decision_logs: { reporting: Record<string, unknown> } } =>
  parse(opaConfig({ url: 'https://acl.example', caFile: undefined, tokenFile: '/t', tenant: 'acme', connector: 'gw', bundle: 'docs' }));

describe('the OPA configuration we print', () => {
  it("uploads decision logs in chunks larger than OPA's 32 KiB default, with which OPA loses decisions", () => {
    expect(printed().decision_logs.reporting).toMatchObject({ upload_size_limit_bytes: DECISION_LOG_CHUNK_BYTES });
    expect(DECISION_LOG_CHUNK_BYTES).toBeGreaterThan(32 * 1024);
  });

  it("keeps a chunk's uncompressed size (OPA: at most 8 times the limit) within the service's default --max-upload-bytes", () => {
    const read = readConfig(['--manifests', 'examples', '--insecure-http'], {});
    if (read.ok !== true) throw new Error('the defaults do not read');
    expect(8 * DECISION_LOG_CHUNK_BYTES).toBeLessThanOrEqual(read.config.maxUploadBytes);
  });
});
