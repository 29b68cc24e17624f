// A bundle's bytes: `.manifest`, `policy.rego` and (unless unsigned) `.signatures.json`, packed into
// a tar.gz that is byte-identical for the same inputs and keys on every replica and after every
// restart (fixed order, mtime, mode, owner, names; gzip with no timestamp, from a pure-JavaScript
// deflate so that the bytes do not depend on the zlib build Node happens to ship; RS256 signatures,
// which are deterministic).
import { createHash } from 'node:crypto';
import { createPieceCache, gzipPieces, type PieceCache } from './gzip.ts';
import { pack } from 'tar-stream';
import type { EntityDirectory, RuleModel } from '../policy/index.ts';
import { translate, translatePartsSteps, type RegoVersion } from '../policy/index.ts';
import { SIGNATURES_FILE, type KeyRing } from '../signing/index.ts';
import { bundleSignatures } from './sign.ts';

/** What a bundle is built from. */
export interface BundleInput {
  readonly tenant: string;
  readonly name: string;
  readonly connector: string;
  readonly regoVersion: RegoVersion;
  /** The rules selected for this bundle (selectRules); their order does not matter. */
  readonly rules: readonly RuleModel[];
  /**
   * spec.entityTypes. It is part of the bundle's configuration, so changing it changes the bytes
   * (in .manifest metadata) and the revision even when the same rules stay selected (spec 2.4, 9.2).
   */
  readonly entityTypes?: readonly string[] | undefined;
  /** The tenant's entity directory: policy.rego embeds the part of it the rules read. */
  readonly directory?: EntityDirectory | undefined;
}

/** entityTypes as the manifest records it: sorted, without repeats; absent when empty (= every rule). */
function normalTypes(types: readonly string[] | undefined): string[] | undefined {
  return types && types.length > 0 ? [...new Set(types)].sort() : undefined;
}

/** One archive of a revision and the key that signed it. */
export interface BundleArchive {
  /** The kid of the key whose `.signatures.json` the archive holds; undefined: unsigned (--unsigned-bundles). */
  readonly kid: string | undefined;
  readonly bytes: Uint8Array;
  /** `sha256:<hex>` of the tar.gz. */
  readonly digest: string;
  /** Strong ETag, quoted, derived from the bytes. */
  readonly etag: string;
}

/** A revision: its archive signed by the current key (the fields of BundleArchive), and by the previous one during a rotation. */
export interface BuiltBundle extends BundleArchive {
  readonly rego: string;
  /** policy.rego as it was given to the build, whole or in parts (what `rego` joins). */
  readonly regoText: Text;
  /** sha256 (hex) of policy.rego: what `.signatures.json` lists for it, so signing again hashes nothing. */
  readonly regoHex: string;
  /**
   * sha256 of everything that shapes the content except the revision, the current key's kid
   * included: decides whether the revision moves (a rotation's start moves it, a retirement does not).
   */
  readonly inputDigest: string;
  readonly revision: number;
  readonly manifest: string;
  /** The same revision signed by the ring's previous key, for the OPAs still pinned to it (docs/opa.md). */
  readonly previous?: (BundleArchive & { readonly kid: string }) | undefined;
}

export interface BundleSelection {
  readonly entityTypes?: readonly string[] | undefined;
}

/**
 * The rules a bundle carries: Enforced rules of the tenant, and when entityTypes is not empty only
 * those whose subjectType or resourceType is listed (service spec 2.4).
 */
export function selectRules(tenant: string, rules: readonly RuleModel[], selection: BundleSelection): RuleModel[] {
  const types = new Set(selection.entityTypes ?? []);
  return rules.filter((r) => r.namespace === tenant && r.state === 'Enforced' && entityTypesTake(types, r.subjectType, r.resourceType));
}

/** Whether an entityTypes filter takes a rule of these types: an empty filter takes every rule (lint asks too). */
export function entityTypesTake(types: ReadonlySet<string>, subjectType: string, resourceType: string): boolean {
  return types.size === 0 || types.has(subjectType) || types.has(resourceType);
}

/** sha256 (hex) of a text's UTF-8 bytes or of bytes. */
export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** JSON with keys sorted at every level, so equal values always give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The header comment of every bundle's policy.rego. */
function header(input: BundleInput): string[] {
  return [`Generated by acl-operator for bundle ${input.name} of tenant ${input.tenant}. Do not edit: change the Rule resources instead.`];
}

/**
 * A bundle's policy.rego as steps a caller may spread over turns of the event loop, as parts whose
 * concatenation is the file (translatePartsSteps): a large file is joined only where it is packed.
 */
export function bundleRegoSteps(input: BundleInput): Generator<void, string[]> {
  return translatePartsSteps(input.rules, {
    regoVersion: input.regoVersion,
    ...(input.directory ? { directory: input.directory } : {}),
    header: header(input),
  });
}

/** A text given whole or as parts whose concatenation it is. */
export type Text = string | readonly string[];

export function joinText(text: Text): string {
  return typeof text === 'string' ? text : text.join('');
}

export function textLength(text: Text): number {
  return typeof text === 'string' ? text.length : text.reduce((n, p) => n + p.length, 0);
}

/**
 * sha256 of everything that shapes the content except the revision, from the Rego's sha256 (hex)
 * and the kid of the key that signs (undefined: unsigned).
 */
export function inputDigestOf(input: BundleInput, regoHex: string, kid: string | undefined): string {
  // The Rego by its hash: a bundle with a large directory has megabytes of it, not worth quoting again.
  return `sha256:${sha256(
    canonicalJson({
      rego: regoHex,
      regoVersion: input.regoVersion,
      tenant: input.tenant,
      name: input.name,
      connector: input.connector,
      entityTypes: normalTypes(input.entityTypes),
      signing: kid ?? 'unsigned',
    }),
  )}`;
}

/** A bundle's policy.rego and its sha256 (hex): what a build packs and signs. */
export interface BundleSource {
  readonly rego: Text;
  readonly regoHex: string;
}

/** The Rego of a bundle and its hash, translated in one go (tests, benchmarks; the controller translates in slices). */
export function bundleSource(input: BundleInput): { rego: string; regoHex: string } {
  const rego = translate(input.rules, {
    regoVersion: input.regoVersion,
    ...(input.directory ? { directory: input.directory } : {}),
    header: header(input),
  });
  return { rego, regoHex: sha256(rego) };
}

const EPOCH = new Date(0);

/** Packs files into a deterministic tar: the given order, mtime 0, mode 0644, uid/gid 0, no user names. */
export async function packTar(files: readonly { name: string; content: string }[]): Promise<Uint8Array> {
  const tar = pack();
  const chunks: Buffer[] = [];
  tar.on('data', (c: unknown) => {
    if (Buffer.isBuffer(c)) chunks.push(c);
  });
  const done = new Promise<void>((resolve, reject) => {
    tar.on('end', resolve);
    tar.on('error', reject);
  });
  for (const f of files) {
    tar.entry({ name: f.name, mtime: EPOCH, mode: 0o644, uid: 0, gid: 0, uname: '', gname: '', type: 'file' }, f.content);
  }
  tar.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** Where the third entry of a tar of `.manifest` and `policy.rego` starts (ustar: a 512-byte header, the content padded to 512). */
function thirdEntryAt(manifest: string, rego: string): number {
  const padded = (n: number): number => Math.ceil(n / 512) * 512;
  return 512 + padded(Buffer.byteLength(manifest)) + 512 + padded(Buffer.byteLength(rego));
}

/**
 * The archive's bytes: `.manifest`, `policy.rego`, then `.signatures.json` when given, tar then
 * gzip (level 9, no timestamp), in pieces deflated once each and kept in `cache` (gzip.ts): the same
 * bytes with or without it. The signatures come last, in a gzip member of their own, so the archives
 * of a revision signed by two keys share every piece of policy.rego, and a new revision whose
 * policy.rego did not change compresses only the pieces holding `.manifest` and the signatures.
 */
export async function packBundleFiles(
  manifest: string,
  rego: string,
  signatures: string | undefined,
  cache?: PieceCache,
): Promise<Uint8Array> {
  const tar = await packTar([
    { name: '.manifest', content: manifest },
    { name: 'policy.rego', content: rego },
    ...(signatures === undefined ? [] : [{ name: SIGNATURES_FILE, content: signatures }]),
  ]);
  return gzipPieces(tar, cache, signatures === undefined ? undefined : thirdEntryAt(manifest, rego));
}

/**
 * Hashing and packing, the parts of a build that take long on a large bundle: in this thread
 * (IN_THREAD_PACKER), or in the packing thread (packing.ts), with the same bytes either way.
 */
export interface BundlePacker {
  /** sha256 (hex) of a text's UTF-8 bytes. */
  hash(text: Text): Promise<string>;
  /** The archive of these files (packBundleFiles) and its sha256 (hex). */
  pack(manifest: string, rego: Text, signatures?: string): Promise<{ bytes: Uint8Array; hex: string }>;
}

/** Compressed pieces of the bundles packed in this thread. */
const IN_THREAD_PIECES = createPieceCache();

export const IN_THREAD_PACKER: BundlePacker = {
  hash: async (text) => sha256(joinText(text)),
  async pack(manifest, rego, signatures) {
    const bytes = await packBundleFiles(manifest, joinText(rego), signatures, IN_THREAD_PIECES);
    return { bytes, hex: sha256(bytes) };
  },
};

/** The `.manifest` of a revision. */
export function bundleManifest(input: BundleInput, revision: number): string {
  return `${canonicalJson({
    revision: String(revision),
    roots: ['acl'],
    rego_version: input.regoVersion,
    metadata: {
      tenant: input.tenant,
      bundle: input.name,
      connector: input.connector,
      rules: input.rules.length,
      entityTypes: normalTypes(input.entityTypes),
    },
  })}\n`;
}

/** How a revision is built. */
export interface BuildOptions {
  /** policy.rego and its hash, when the caller has them (translating a large directory takes a while); default bundleSource(input). */
  readonly source?: BundleSource | undefined;
  readonly packer?: BundlePacker | undefined;
  /** The keys that sign: the current key's archive, and the previous key's too; undefined: unsigned. */
  readonly ring?: KeyRing | undefined;
  /** A build of the same revision from the same inputs: its archives signed by a key of `ring` are taken as they are. */
  readonly reuse?: BuiltBundle | undefined;
}

/** One archive of a revision: signed by `key` unless unsigned, then packed. */
async function archiveOf(
  manifest: string,
  source: BundleSource,
  packer: BundlePacker,
  kid: string | undefined,
  signatures: string | undefined,
): Promise<BundleArchive> {
  const { bytes, hex } = await packer.pack(manifest, source.rego, signatures);
  return { kid, bytes, digest: `sha256:${hex}`, etag: `"${hex}"` };
}

/**
 * Builds the archives of a revision: `.manifest`, `policy.rego` and, when a ring is given, the
 * `.signatures.json` of its current key (and a second archive signed by its previous key). Signing
 * is one RSA operation over a few hundred bytes (under a millisecond) on this thread, so the private
 * key never crosses to the packing thread; policy.rego's hash is the one the source already has.
 */
export async function buildBundle(input: BundleInput, revision: number, options: BuildOptions = {}): Promise<BuiltBundle> {
  const { ring, reuse } = options;
  const packer = options.packer ?? IN_THREAD_PACKER;
  // Taken from `reuse` when the caller has no source: re-signing a revision translates nothing.
  let source = options.source ?? (reuse ? undefined : bundleSource(input));
  const regoHex = source?.regoHex ?? (reuse as BuiltBundle).regoHex;
  const sourceNow = (): BundleSource => (source ??= { rego: (reuse as BuiltBundle).regoText, regoHex });
  const manifest = bundleManifest(input, revision);
  const kid = ring?.current.kid;
  const sameRevision = reuse !== undefined && reuse.manifest === manifest && reuse.regoHex === regoHex;
  const build = (k: string | undefined): Promise<BundleArchive> => {
    if (sameRevision && reuse.kid === k) return Promise.resolve(reuse);
    if (sameRevision && k !== undefined && reuse.previous?.kid === k) return Promise.resolve(reuse.previous);
    const key = k === undefined ? undefined : k === ring?.current.kid ? ring.current : ring?.previous;
    return archiveOf(manifest, sourceNow(), packer, k, key ? bundleSignatures(manifest, regoHex, key) : undefined);
  };
  const previousKid = ring?.previous && ring.previous.kid !== kid ? ring.previous.kid : undefined;
  const [current, previous] = await Promise.all([build(kid), previousKid === undefined ? undefined : build(previousKid)]);
  return assemble(input, revision, sourceNow(), manifest, current, previous);
}

/** The BuiltBundle of these archives; the text of policy.rego is joined only if someone reads it (render, tests): serving never does. */
function assemble(
  input: BundleInput,
  revision: number,
  source: BundleSource,
  manifest: string,
  current: BundleArchive,
  previous: BundleArchive | undefined,
): BuiltBundle {
  const { regoHex } = source;
  let rego: string | undefined = typeof source.rego === 'string' ? source.rego : undefined;
  return {
    get rego() {
      rego ??= joinText(source.rego);
      return rego;
    },
    regoText: source.rego,
    regoHex,
    inputDigest: inputDigestOf(input, regoHex, current.kid),
    revision,
    manifest,
    kid: current.kid,
    bytes: current.bytes,
    digest: current.digest,
    etag: current.etag,
    ...(previous?.kid === undefined ? {} : { previous: { ...previous, kid: previous.kid } }),
  };
}
