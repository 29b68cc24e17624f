// The console's one stylesheet, served as /console/assets/console-<hash>.css. System fonts, no
// images; light and dark follow the system; readable from a phone to a 1280 px screen and up.
export const STYLE = `
:root { --bg: #f7f8fa; --fg: #1b1f24; --muted: #59636e; --card: #fff; --line: #d8dee4; --accent: #0b5cad;
  --ok: #1a7f37; --ok-bg: #dafbe1; --warn: #8a5a00; --warn-bg: #fff1c2; --bad: #b3261e; --bad-bg: #ffe1de;
  --info: #0b5cad; --info-bg: #ddeeff; --code: #f0f2f5; color-scheme: light dark; }
@media (prefers-color-scheme: dark) { :root { --bg: #0f1317; --fg: #e6e9ed; --muted: #9aa5b1; --card: #171c21; --line: #2c343c;
  --accent: #6cb6ff; --ok: #4ac26b; --ok-bg: #12311d; --warn: #e3b341; --warn-bg: #3a2d0b; --bad: #ff7b72; --bad-bg: #3d1512;
  --info: #6cb6ff; --info-bg: #10273f; --code: #1f252b; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible, [tabindex]:focus-visible
  { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -9999px; top: 0; background: var(--card); padding: .5rem 1rem; z-index: 2; }
.skip:focus { left: .5rem; top: .5rem; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.25rem; padding: .6rem 1.25rem; background: var(--card); border-bottom: 1px solid var(--line); }
.brand { font-weight: 700; letter-spacing: .01em; }
nav.top { display: flex; flex-wrap: wrap; align-items: center; gap: .25rem .9rem; flex: 1; }
nav.top a { text-decoration: none; padding: .15rem .1rem; }
nav.top a[aria-current="page"] { font-weight: 600; border-bottom: 2px solid var(--accent); }
nav.top .sep { color: var(--muted); }
nav.top .grow { flex: 1; }
.who { color: var(--muted); font-size: .9em; }
main { max-width: 1240px; margin: 0 auto; padding: 1.25rem; }
main:focus { outline: none; }
footer { max-width: 1240px; margin: 0 auto; padding: 0 1.25rem 1.5rem; color: var(--muted); font-size: .85em; min-height: 1.5em; }
h1 { font-size: 1.5rem; margin: .2rem 0 1rem; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 1.6rem 0 .6rem; }
h3 { font-size: 1rem; margin: 1rem 0 .4rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.1rem; margin: 0 0 1rem; }
.card > :first-child { margin-top: 0; } .card > :last-child { margin-bottom: 0; }
.stat-chip { white-space: nowrap; margin-right: .35rem; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 1rem; }
.stats { display: flex; flex-wrap: wrap; gap: .5rem 1.25rem; margin: .4rem 0; }
.stat b { font-size: 1.25rem; display: block; }
.stat span { color: var(--muted); font-size: .85em; }
.muted, .empty { color: var(--muted); }
.badge { display: inline-block; padding: 0 .5rem; border-radius: 999px; font-size: .8em; font-weight: 600; white-space: nowrap; border: 1px solid transparent; }
.badge.ok { color: var(--ok); background: var(--ok-bg); } .badge.warn { color: var(--warn); background: var(--warn-bg); }
.badge.bad { color: var(--bad); background: var(--bad-bg); } .badge.info { color: var(--info); background: var(--info-bg); }
.badge.muted { color: var(--muted); border-color: var(--line); }
.table-wrap { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; background: var(--card); margin: .4rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .92em; }
th, td { text-align: left; padding: .45rem .7rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; background: var(--code); white-space: nowrap; }
tbody tr:last-child td { border-bottom: 0; }
td a { white-space: nowrap; }
td.num, th.num { font-variant-numeric: tabular-nums; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
code { background: var(--code); padding: 0 .25rem; border-radius: 4px; overflow-wrap: anywhere; }
td code { overflow-wrap: break-word; }
pre code { background: none; padding: 0; border-radius: 0; overflow-wrap: normal; }
dd pre { margin: 0; }
pre { background: var(--code); padding: .8rem 1rem; border-radius: 8px; overflow: auto; max-height: 32rem; border: 1px solid var(--line); }
.notice { padding: .7rem 1rem; border-radius: 8px; margin: 0 0 1rem; border: 1px solid var(--line); }
.notice.ok { background: var(--ok-bg); } .notice.warn { background: var(--warn-bg); } .notice.bad { background: var(--bad-bg); } .notice.info { background: var(--info-bg); }
form.inline { display: inline; margin: 0; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
form > .actions { margin-top: .5rem; }
button, .button { font: inherit; padding: .35rem .85rem; border-radius: 6px; border: 1px solid var(--line); background: var(--card); color: var(--fg); cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.danger { color: var(--bad); border-color: var(--bad); }
button.link { border: 0; background: none; color: var(--accent); padding: 0; text-decoration: underline; }
button:disabled { opacity: .55; cursor: not-allowed; }
label { display: block; font-weight: 600; margin: .6rem 0 .25rem; }
input[type=text], input[type=password], input[type=search], select, textarea { font: inherit; width: 100%; max-width: 40rem; padding: .4rem .55rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); color: var(--fg); }
textarea { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .88em; min-height: 12rem; max-width: none; }
.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: flex-end; margin: .5rem 0; }
.filters label { margin: 0; font-weight: 500; font-size: .9em; }
.filters input, .filters select { width: auto; }
.filters input[type=search] { min-width: 17rem; max-width: 100%; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .3rem 1rem; margin: .4rem 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.tabs { display: flex; gap: .25rem; border-bottom: 1px solid var(--line); margin: 1rem 0; flex-wrap: wrap; }
.tabs a { padding: .4rem .9rem; text-decoration: none; border: 1px solid transparent; border-bottom: 0; border-radius: 6px 6px 0 0; }
.tabs a[aria-current="page"] { border-color: var(--line); background: var(--card); font-weight: 600; margin-bottom: -1px; }
.token { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.token input { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; flex: 1; min-width: 12rem; }
.signin { max-width: 28rem; margin: 3rem auto; }
@media (max-width: 640px) { main { padding: .75rem; } header { padding: .5rem .75rem; } h1 { font-size: 1.25rem; } dl.facts { gap: .3rem .75rem; }
  nav.top { flex-basis: 100%; } }
ul.plain { list-style: none; margin: 0; padding: 0; }
ul.plain li + li { margin-top: .2rem; }
`;
