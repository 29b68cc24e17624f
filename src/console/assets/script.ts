// The console's one script, served as /console/assets/console-<hash>.js (docs/design/console.md): live
// updates over Server-Sent Events, copy buttons, confirmations and the playground's examples. Every
// page works without it; it only spares a reload or a click. Plain ES2020, no framework, no build step.
export const SCRIPT = `'use strict';
(function () {
  var status = document.getElementById('live');
  function say(text) { if (status) status.textContent = text; }

  // Live: each "change" event re-reads this page and swaps in its [data-live] regions, keeping focus.
  function refresh() {
    fetch(location.href, { headers: { 'X-Console-Live': '1' }, credentials: 'same-origin', redirect: 'manual' })
      .then(function (r) {
        if (r.type === 'opaqueredirect' || r.status === 401) { location.reload(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (text) {
        if (text === null || text === undefined) return;
        var next = new DOMParser().parseFromString(text, 'text/html');
        var focused = document.activeElement && document.activeElement.id;
        var held = 0;
        document.querySelectorAll('[data-live]').forEach(function (old) {
          var fresh = next.getElementById(old.id);
          if (!fresh || fresh.innerHTML === old.innerHTML) return;
          // A region someone is reading into (an open detail) or typing in waits for the next change.
          if (old.querySelector('details[open]') || (old.contains(document.activeElement) && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName))) { held++; return; }
          old.replaceWith(document.importNode(fresh, true));
        });
        if (focused) { var f = document.getElementById(focused); if (f && f !== document.activeElement) f.focus(); }
        say(held ? 'Live · an open section waits: close it to see the newest' : 'Live · updated ' + new Date().toLocaleTimeString());
      })
      .catch(function () { say('Live updates paused: the console is not reachable'); });
  }
  if (document.querySelector('[data-live]') && window.EventSource) {
    var source = new EventSource('/console/events');
    source.addEventListener('change', refresh);
    source.addEventListener('signedout', function () { source.close(); location.reload(); });
    source.onopen = function () { say('Live'); };
    source.onerror = function () { say('Live updates reconnecting…'); };
  }

  document.addEventListener('click', function (e) {
    var button = e.target.closest && e.target.closest('button[data-copy]');
    if (!button) return;
    var source = document.getElementById(button.getAttribute('data-copy'));
    if (!source) return;
    var text = source.value !== undefined ? source.value : source.textContent;
    var done = function () { button.textContent = 'Copied'; say('Copied to the clipboard'); };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, function () { select(source); });
    else select(source);
  });
  function select(el) {
    if (el.select) { el.focus(); el.select(); } else { var r = document.createRange(); r.selectNodeContents(el); var s = getSelection(); s.removeAllRanges(); s.addRange(r); }
    say('Selected: press Ctrl+C (or ⌘C) to copy');
  }

  document.addEventListener('submit', function (e) {
    var message = e.target.getAttribute && e.target.getAttribute('data-confirm');
    if (message && !window.confirm(message)) e.preventDefault();
  });

  document.addEventListener('change', function (e) {
    var target = e.target.getAttribute && e.target.getAttribute('data-fill');
    if (!target) return;
    var area = document.getElementById(target);
    if (area && e.target.value) { area.value = e.target.value; area.focus(); }
  });
})();
`;
