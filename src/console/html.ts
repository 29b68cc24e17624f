// The console's one way to make HTML (docs/design/console.md, "Shape"): a tagged template that escapes
// every interpolation, so a description, a name, a directory property or a user agent is rendered inert
// (issue 16, "Access"). Pages are pure functions returning Html; only the route turns it into a string.
//
// Contexts: interpolations are safe in element text and inside double-quoted (or single-quoted) attribute
// values. The template itself is checked once per call site, and a bug in it throws: an interpolation in an
// unquoted attribute value or in an event-handler (on…=) or style attribute. A URL attribute (href, src,
// action, formaction) holds exactly one SafeUrl from safeHref(); an attribute value takes no Html; inside a
// tag outside any value (a tag or attribute name) only Html from raw() goes. Never interpolate inside <script> or <style>: the CSP forbids
// inline script and style anyway.

/** A fragment of HTML that is safe to emit as is: made only by `html` and `raw`. */
class SafeHtml {
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  toString(): string {
    return this.#text;
  }
}
export type Html = SafeHtml;

/** A URL that safeHref() accepted: the only value allowed in a URL attribute. */
class SafeUrl {
  readonly #url: string;
  constructor(url: string) {
    this.#url = url;
  }
  toString(): string {
    return this.#url;
  }
}
export type Url = SafeUrl;

/** What a template may interpolate; `undefined`, `null` and `false` render nothing (for `cond && html\`…\``). */
export type Interpolation = string | number | Html | Url | undefined | null | false | readonly Interpolation[];

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/**
 * Text escaped for HTML element text and quoted attribute values. Lone surrogates and NUL become U+FFFD,
 * as the HTML parser would read them, so what we escaped is what the browser sees.
 */
export function escapeHtml(text: string): string {
  return text
    .toWellFormed()
    .replace(/\0/g, '\uFFFD')
    .replace(/[&<>"'`]/g, (c) => ESCAPES[c] ?? c);
}

// Inside a start tag, at an open quoted attribute value: the one place in a tag data may go.
const QUOTED_VALUE = /=\s*("[^"]*|'[^']*)$/;
// Attributes whose value is code, never data.
const CODE_ATTRIBUTE = /[\s"'](on[a-z]+|style)\s*=\s*["']?[^"']*$/i;
// Inside the value of an attribute whose value is a URL a browser follows.
const URL_ATTRIBUTE = /[\s"'](href|src|action|formaction|xlink:href)\s*=\s*("[^"]*|'[^']*)$/i;

// text: element text; value: a quoted attribute value (text only: Html there could close the quote);
// url: a URL attribute's whole value; markup: inside a tag but outside any value, where only our own Html
// (a `checked`, a `disabled`) may go, never data.
type Slot = 'text' | 'value' | 'url' | 'markup';
const checked = new WeakMap<TemplateStringsArray, readonly Slot[]>();

/** What each interpolation of a template may hold; throws when the template is unsafe whatever the values. */
function slotsOf(strings: TemplateStringsArray): readonly Slot[] {
  const known = checked.get(strings);
  if (known) return known;
  let prefix = '';
  const slots = strings.slice(0, -1).map((before, i): Slot => {
    prefix += before;
    // Inside a start tag when its "<" has not been closed yet (interpolated values never hold "<" or ">").
    const open = prefix.lastIndexOf('<');
    if (open <= prefix.lastIndexOf('>')) return 'text';
    const tag = prefix.slice(open);
    const where = `html template, interpolation ${i + 1} after ${JSON.stringify(tag.slice(-40))}`;
    if (CODE_ATTRIBUTE.test(tag)) throw new Error(`${where}: never interpolate into an event handler or style attribute`);
    if (/=\s*$/.test(tag)) throw new Error(`${where}: quote the attribute value`);
    if (!QUOTED_VALUE.test(tag)) return 'markup';
    const url = URL_ATTRIBUTE.exec(tag)?.[2];
    if (url === undefined) return 'value';
    // The whole value is one safeHref() URL: "java${x}", " ${x}" or "/${x}" would let data pick the scheme or host.
    if (url.length > 1 || (i > 0 && !/["']/.test(before))) throw new Error(`${where}: a URL attribute's value is one safeHref() URL`);
    return 'url';
  });
  checked.set(strings, slots);
  return slots;
}

function renderValue(value: Interpolation, slot: Slot): string {
  if (value === undefined || value === null || value === false) return '';
  if (Array.isArray(value)) return value.map((v: Interpolation) => renderValue(v, slot)).join('');
  if (slot === 'url' && !(value instanceof SafeUrl)) {
    throw new TypeError('html template: a URL attribute takes only a SafeUrl from safeHref()');
  }
  if (slot === 'markup' && !(value instanceof SafeHtml)) {
    throw new TypeError('html template: inside a tag, outside a quoted value, only Html from raw() may go');
  }
  if (slot === 'value' && value instanceof SafeHtml) {
    throw new TypeError('html template: an attribute value takes text, not Html');
  }
  if (value instanceof SafeHtml) return value.toString();
  if (value instanceof SafeUrl) return escapeHtml(value.toString());
  if (typeof value === 'string') return escapeHtml(value);
  if (typeof value === 'number') return String(value);
  // Reachable only past the types (true, an object): rendering "[object Object]" would hide the bug.
  throw new TypeError(`html template: cannot render a value of type ${typeof value}`);
}

/** The tagged template: `html\`<p title="${title}">${text}</p>\`` with every interpolation escaped. */
export function html(strings: TemplateStringsArray, ...values: readonly Interpolation[]): Html {
  const slots = slotsOf(strings);
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) {
    out += renderValue(values[i], slots[i] ?? 'text') + (strings[i + 1] ?? '');
  }
  return new SafeHtml(out);
}

/**
 * Markup emitted as is, without escaping. Only for our own constant fragments (an SVG icon, a doctype),
 * never for anything that came from a user, a resource or a request.
 */
export function raw(trusted: string): Html {
  return new SafeHtml(trusted);
}

/** The text of a rendered page or fragment, for the response body. */
export function renderHtml(fragment: Html): string {
  return fragment.toString();
}

const SCHEME = /^([a-z][a-z0-9+.-]*):/i;

/**
 * A URL safe to put in href/src/action: an http(s) URL, or a relative reference (path, query or fragment)
 * that stays on this origin. Anything else (javascript:, data:, a protocol-relative //host, a backslash,
 * whitespace or control characters a browser would strip) is refused: undefined.
 */
export function safeHref(url: string): Url | undefined {
  // Browsers drop tabs and newlines inside URLs and treat "\" as "/": "java\tscript:" and "/\evil" are traps.
  if (url === '' || !url.isWellFormed() || /[\0-\x20\x7f\\]/.test(url)) return undefined;
  const scheme = SCHEME.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) return url.startsWith('//') ? undefined : new SafeUrl(url);
  if (scheme !== 'http' && scheme !== 'https') return undefined;
  // "http:evil" parses (as http://evil/): accept only the plain absolute form.
  return url.slice(scheme.length + 1).startsWith('//') && URL.canParse(url) ? new SafeUrl(url) : undefined;
}
