import { describe, expect, it } from 'vitest';
import { escapeHtml, type Html, html, type Interpolation, raw, renderHtml, safeHref } from './html.ts';

const text = (fragment: Html): string => renderHtml(fragment);

describe('html templates', () => {
  it('render a <script> in element text as text', () => {
    expect(text(html`<p>${'<script>alert(1)</script>'}</p>`)).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
  });

  it('keep a hostile string inside its double-quoted attribute', () => {
    const out = text(html`<td title="${'"><img src=x onerror=alert(1)>'}">x</td>`);
    expect(out).toBe('<td title="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;">x</td>');
    expect(out).not.toContain('<img');
  });

  it('escape & < > " \' and the backtick', () => {
    expect(escapeHtml(`&<>"'\``)).toBe('&amp;&lt;&gt;&quot;&#39;&#96;');
    expect(text(html`<span title='${"' onmouseover='x"}'>`)).toBe(`<span title='&#39; onmouseover=&#39;x'>`);
  });

  it('turn lone surrogates and NUL into U+FFFD, and keep paired surrogates', () => {
    expect(text(html`<b>${'a\uD800b\uDC00c\0'}</b>`)).toBe('<b>a\uFFFDb\uFFFDc\uFFFD</b>');
    expect(text(html`<b>${'😀'}</b>`)).toBe('<b>😀</b>');
  });

  it('pass nested templates through once, escaping only the values inside them', () => {
    const row = (name: string): Html => html`<li>${name}</li>`;
    const list = html`<ul>${['a&b', '<i>'].map(row)}</ul>`;
    expect(text(html`<nav>${list}</nav>`)).toBe('<nav><ul><li>a&amp;b</li><li>&lt;i&gt;</li></ul></nav>');
  });

  it('render undefined, null and false as nothing, and numbers as themselves', () => {
    const none: Interpolation[] = [undefined, null, false];
    expect(text(html`<p>${none}${0}${-1.5}</p>`)).toBe('<p>0-1.5</p>');
  });

  it('emit raw() fragments as they are', () => {
    expect(text(html`${raw('<!doctype html>')}<p>${raw('<b>ok</b>')}</p>`)).toBe('<!doctype html><p><b>ok</b></p>');
  });

  it('refuse values a type would have refused, rather than print [object Object]', () => {
    const bad = [{ toString: () => '<x>' }, true] as unknown as Interpolation[];
    for (const value of bad) expect(() => html`<p>${value}</p>`).toThrow(TypeError);
  });
});

describe('html template checks', () => {
  it('refuse an interpolation in an unquoted attribute value', () => {
    expect(() => html`<a title=${'x onmouseover=alert(1)'}>`).toThrow(/quote the attribute value/);
  });

  it('refuse an interpolation in an event handler or a style attribute', () => {
    expect(() => html`<a onclick="go(${'1'})">`).toThrow(/event handler or style/);
    expect(() => html`<p style="color: ${'red'}">`).toThrow(/event handler or style/);
  });

  it('take only raw() Html inside a tag outside a value, so data never names a tag or an attribute', () => {
    expect(() => html`<${'script'}>`).toThrow(TypeError);
    expect(() => html`<input type="checkbox" ${'autofocus onfocus=alert(1)'}>`).toThrow(TypeError);
    expect(text(html`<input type="checkbox" ${raw('checked')}>`)).toBe('<input type="checkbox" checked>');
  });

  it('take only a safeHref() URL in href, src and action', () => {
    expect(() => html`<a href="${'javascript:alert(1)'}">x</a>`).toThrow(/safeHref/);
    expect(() => html`<form action="${'/console/x'}">`).toThrow(/safeHref/);
    const url = safeHref('/console/bundles?tenant=a&b="c"');
    expect(text(html`<a class="${'c'}" href="${url}">x</a>`)).toBe(
      '<a class="c" href="/console/bundles?tenant=a&amp;b=&quot;c&quot;">x</a>',
    );
  });

  it('take the whole of a URL attribute from one safeHref() URL, so data never picks the scheme or host', () => {
    const url = safeHref('/console');
    expect(() => html`<a href="java${'script:alert(1)'}">`).toThrow(/one safeHref/);
    expect(() => html`<a href=" ${url}">`).toThrow(/one safeHref/);
    expect(() => html`<a href="/${'/evil.example'}">`).toThrow(/one safeHref/);
    expect(() => html`<a href="${url}${url}">`).toThrow(/one safeHref/);
    expect(text(html`<a href="${url}" title="${'t'}">`)).toBe('<a href="/console" title="t">');
  });

  it('take no Html in an attribute value, where its quotes would end the value', () => {
    expect(() => html`<p title="${html`<b class="x">`}">`).toThrow(/takes text, not Html/);
  });

  it('does not mistake "a = b" in text for an attribute', () => {
    expect(text(html`<p>count = ${'<1>'}</p>`)).toBe('<p>count = &lt;1&gt;</p>');
  });
});

describe('safeHref', () => {
  it.each([
    '/console',
    '/console/bundles/acme/main?x=1#top',
    'bundles/acme',
    './a:b',
    '?page=2',
    '#section',
    'https://example.com/a?b=c',
    'HTTP://example.com',
  ])('allows %j', (url) => {
    expect(safeHref(url)?.toString()).toBe(url);
  });

  it.each([
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    'java\tscript:alert(1)',
    ' javascript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:x',
    'file:///etc/passwd',
    '//evil.example/x',
    '/\\evil.example',
    'http:evil',
    'https://',
    '',
    '/a\uD800',
    '/a\nb',
  ])('refuses %j', (url) => {
    expect(safeHref(url)).toBeUndefined();
  });
});
