// The weight-relay operator console: polls control-api's read-only operator summaries every
// two seconds with the operator token typed in (kept in sessionStorage, this tab only). Every
// value from the API reaches the page as text (textContent), never as markup.
'use strict';

(() => {
  const TOKEN_KEY = 'wr.console.token';
  const POLL_MS = 2000;
  const LOADER_PAGE = 100;
  const API = new URL('../api/v1/', window.location.href);
  const $ = (id) => document.getElementById(id);

  let token = null;
  let timer = null;
  let loaderCursors = [null];
  let lastLoaderPage = 0;
  let selectedPlan = null;
  const planLoads = new Map();

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === null || v === undefined) continue;
      if (k === 'class') e.className = v;
      else e.setAttribute(k, String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  async function api(path, withToken) {
    const response = await fetch(new URL(path, API), {
      headers: { Authorization: 'Bearer ' + (withToken || token), Accept: 'application/json' },
      cache: 'no-store',
    });
    if (!response.ok) {
      let detail = response.statusText;
      try {
        const problem = await response.json();
        detail = (problem.title || '') + (problem.detail ? ': ' + problem.detail : '');
      } catch (ignored) {
        // not problem+json: keep the status text
      }
      throw new ApiError(response.status, response.status + ' ' + detail);
    }
    return response.json();
  }

  function bytes(n) {
    if (n === null || n === undefined) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = Number(n);
    let u = 0;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return (u === 0 ? String(v) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + units[u];
  }

  function age(ms) {
    if (ms === null || ms === undefined) return '–';
    return ms < 10000 ? (ms / 1000).toFixed(1) + ' s ago' : Math.round(ms / 1000) + ' s ago';
  }

  function when(iso) {
    if (!iso) return '–';
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? String(iso) : d.toISOString().replace('T', ' ').slice(0, 19) + 'Z';
  }

  function badge(text) {
    return el('span', { class: 'badge ' + String(text) }, text);
  }

  function bar(done, total, kind) {
    const ratio = total > 0 ? Math.min(1, (done || 0) / total) : 0;
    const inner = el('span');
    inner.style.width = (ratio * 100).toFixed(1) + '%';
    return el('span', {},
      el('span', { class: 'bar ' + kind, role: 'progressbar', 'aria-valuemin': 0,
        'aria-valuemax': total || 0, 'aria-valuenow': done || 0 }, inner),
      el('span', { class: 'bar-label' },
        total > 0 ? bytes(done || 0) + ' / ' + bytes(total) + ' (' + Math.round(ratio * 100) + '%)'
          : bytes(done || 0)));
  }

  function empty(tbody, columns, text) {
    tbody.replaceChildren(el('tr', {}, el('td', { class: 'empty', colspan: columns }, text)));
  }

  function renderGenerations(models) {
    const tbody = $('generations').tBodies[0];
    const rows = [];
    for (const m of models) {
      for (const o of m.generations) {
        const g = o.generation;
        const ckpt = o.checkpoint;
        const saved = ckpt && ckpt.saved
          ? ckpt.directory + ' (' + when(ckpt.savedAt) + ')' : '–';
        rows.push(el('tr', { 'data-model': m.model, 'data-generation': g.generation,
          'data-state': g.state, 'data-active': m.activeGeneration === g.generation },
          el('td', {}, m.model),
          el('td', { class: 'num' }, g.generation,
            m.activeGeneration === g.generation ? ' (active)' : ''),
          el('td', {}, badge(g.state)),
          el('td', { class: 'num' }, bytes(g.bytesExpected)),
          el('td', { class: 'num' }, g.objectsRegistered + ' / ' + g.objectsExpected),
          el('td', { class: 'num' }, g.trainerStep),
          el('td', {}, when(g.committedAt)),
          el('td', { class: 'saved' }, saved)));
      }
    }
    if (rows.length === 0) empty(tbody, 8, 'no generation yet');
    else tbody.replaceChildren(...rows);
  }

  function renderSegments(segments) {
    const tbody = $('segments').tBodies[0];
    if (segments.length === 0) {
      empty(tbody, 5, 'no live segment owner');
      return;
    }
    tbody.replaceChildren(...segments.map((s) => el('tr', { 'data-segment': s.segment },
      el('td', {}, s.segment),
      el('td', {}, s.node),
      el('td', {}, s.role || 'trainer'),
      el('td', {}, s.alive ? age(s.heartbeatAgeMs) : badge('dead')),
      el('td', {}, bar(s.storedBytes, s.size, 'fill'), ' ', s.objects + ' objects'))));
  }

  function renderLoaders(loaders) {
    const tbody = $('loaders').tBodies[0];
    $('loaders-page').textContent = 'page ' + (lastLoaderPage + 1) + ', ' + loaders.length + ' loaders';
    $('loaders-next').disabled = loaders.length < LOADER_PAGE;
    $('loaders-first').disabled = lastLoaderPage === 0;
    if (loaders.length === 0) {
      empty(tbody, 7, 'no live loader');
      return;
    }
    tbody.replaceChildren(...loaders.map((l) => el('tr', { 'data-instance': l.instance },
      el('td', {}, l.instance),
      el('td', {}, l.model + ' / ' + l.group),
      el('td', {}, l.node),
      el('td', {}, (l.modes || []).join(', '), ' × ' + l.workers),
      el('td', { class: 'num' }, l.epoch),
      el('td', { class: 'num' }, l.generation === undefined || l.generation === null ? '–' : l.generation),
      el('td', {}, l.alive ? age(l.heartbeatAgeMs) : badge('dead')))));
  }

  function renderUpdates(overviews) {
    const box = $('updates');
    if (overviews.length === 0) {
      box.replaceChildren(el('p', { class: 'empty' }, 'no update session yet'));
      return;
    }
    box.replaceChildren(...overviews.map(({ session: s, planned }) => {
      const plan = new Map(planned.map((p) => [p.instance, p]));
      const d = s.durations || {};
      const phases = [['prepare', d.prepareMs], ['apply', d.applyMs], ['verify', d.verifyMs],
        ['post-apply', d.postApplyMs], ['fetch', d.fetchMs], ['install', d.installMs],
        ['engines paused', d.pauseMs]].filter(([, v]) => v !== undefined && v !== null)
        .map(([k, v]) => k + ' ' + v + ' ms').join(', ');
      const rows = s.participants.map((p) => {
        const mine = plan.get(p.instance);
        const trouble = [p.failingPeer ? 'failing peer: ' + p.failingPeer : null, p.error]
          .filter((x) => x).join('; ');
        return el('tr', { 'data-instance': p.instance, 'data-phase': p.phase },
          el('td', {}, p.instance),
          el('td', {}, badge(p.phase)),
          el('td', {}, bar(p.bytesRead, mine ? mine.readBytes : 0, 'read')),
          el('td', {}, bar(p.bytesPushed, mine ? mine.pushedBytes : 0, 'pushed')),
          el('td', {}, bar(p.bytesReceived, mine ? mine.receivedBytes : 0, 'received')),
          el('td', { class: 'failure' }, trouble));
      });
      return el('div', { class: 'session', 'data-model': s.model, 'data-generation': s.generation,
        'data-group': s.group, 'data-state': s.state },
        el('h3', {}, s.model + ' → generation ' + s.generation + ', group ' + s.group + ' ',
          badge(s.state)),
        el('div', { class: 'meta' }, 'started ' + when(s.startedAt),
          phases ? '; ' + phases : '',
          s.verifiedObjects !== undefined && s.verifiedObjects !== null
            ? '; ' + s.verifiedObjects + ' objects verified' : '',
          s.planId ? '; plan ' + s.planId.slice(0, 12) : ''),
        s.failure || s.failedInstance
          ? el('div', { class: 'failure' }, 'failed: ' + (s.failedInstance || '?') + ': ' + (s.failure || ''))
          : null,
        el('table', {},
          el('thead', {}, el('tr', {}, ['loader', 'phase', 'read', 'pushed', 'received', 'failing peer / error']
            .map((h) => el('th', {}, h)))),
          el('tbody', {}, rows)));
    }));
  }

  function renderNics(load) {
    const chart = $('nic-chart');
    if (!load) {
      $('nic-caption').textContent = 'no update session with a routing plan yet';
      chart.replaceChildren();
      return;
    }
    const total = (n) => (n.side === 'trainer' ? n.readBytes : n.readBytes + n.pushedBytes);
    const max = Math.max(1, ...load.nics.map(total));
    const rollout = load.nics.filter((n) => n.side === 'rollout').map(total);
    const mean = rollout.reduce((a, b) => a + b, 0) / Math.max(1, rollout.length);
    $('nic-caption').textContent = 'plan ' + load.planId.slice(0, 12) + ': ' + load.nics.length
      + ' NICs; rollout NICs max / mean = '
      + (mean > 0 ? (Math.max(...rollout) / mean).toFixed(2) : '–');
    const cells = [];
    for (const n of load.nics) {
      const segment = (value, kind) => {
        const s = el('span', { class: kind, title: kind + ' ' + bytes(value) });
        s.style.width = ((100 * value) / max).toFixed(2) + '%';
        return s;
      };
      const parts = n.side === 'trainer'
        ? [segment(n.readBytes, 'served')]
        : [segment(n.readBytes, 'read'), segment(n.pushedBytes, 'pushed')];
      cells.push(
        el('div', { class: 'label' }, n.node + ' nic' + n.nic + ' (' + n.side + ')'),
        el('div', { class: 'track', 'data-node': n.node, 'data-nic': n.nic }, parts),
        el('div', { class: 'value' }, n.side === 'trainer'
          ? 'served ' + bytes(n.readBytes)
          : 'read ' + bytes(n.readBytes) + ' + pushed ' + bytes(n.pushedBytes)
            + ' (received ' + bytes(n.receivedBytes) + ')'));
    }
    chart.replaceChildren(...cells);
  }

  async function planLoad(planId) {
    if (!planLoads.has(planId)) {
      // a plan never changes: fetched once
      planLoads.set(planId, await api('operator/plans/' + encodeURIComponent(planId) + '/load'));
    }
    return planLoads.get(planId);
  }

  async function refresh() {
    const after = loaderCursors[lastLoaderPage];
    const [models, segments, loaders] = await Promise.all([
      api('operator/models?generations=10'),
      api('operator/segments'),
      api('operator/loaders?limit=' + LOADER_PAGE
        + (after ? '&after=' + encodeURIComponent(after) : '')),
    ]);
    const updates = (await Promise.all(models.map((m) =>
      api('operator/models/' + encodeURIComponent(m.model) + '/updates?limit=10'))))
      .flat()
      .sort((a, b) => String(b.session.startedAt).localeCompare(String(a.session.startedAt)));
    renderGenerations(models);
    renderSegments(segments);
    renderLoaders(loaders);
    renderUpdates(updates);
    const planned = updates.find((u) => u.session.planId);
    selectedPlan = planned ? planned.session.planId : null;
    renderNics(selectedPlan ? await planLoad(selectedPlan) : null);
  }

  function setStatus(text, isError) {
    $('status').textContent = text;
    $('status').className = isError ? 'status error' : 'status';
  }

  async function poll() {
    timer = null;
    try {
      await refresh();
      setStatus('live, refreshed ' + new Date().toLocaleTimeString() + ' (every 2 s)', false);
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
        signOut(e.message);
        return;
      }
      setStatus('refresh failed: ' + e.message + ' (retrying)', true);
    }
    if (token) timer = window.setTimeout(poll, POLL_MS);
  }

  function showConsole() {
    $('login-view').hidden = true;
    $('console-view').hidden = false;
    $('logout').hidden = false;
    if (!timer) poll();
  }

  function signOut(reason) {
    token = null;
    window.sessionStorage.removeItem(TOKEN_KEY);
    if (timer) window.clearTimeout(timer);
    timer = null;
    $('console-view').hidden = true;
    $('logout').hidden = true;
    $('login-view').hidden = false;
    $('login-error').textContent = reason || '';
    setStatus('', false);
  }

  $('login-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const typed = $('login-token').value.trim();
    $('login-error').textContent = '';
    try {
      await api('operator/models?generations=1', typed);
    } catch (e) {
      $('login-error').textContent = e instanceof ApiError && e.status === 403
        ? 'This token is not an operator token. ' + e.message
        : e.message;
      return;
    }
    token = typed;
    window.sessionStorage.setItem(TOKEN_KEY, token);
    $('login-token').value = '';
    showConsole();
  });

  $('logout').addEventListener('click', () => signOut('signed out'));
  $('loaders-next').addEventListener('click', () => {
    const rows = $('loaders').tBodies[0].querySelectorAll('tr[data-instance]');
    if (rows.length === 0) return;
    loaderCursors = loaderCursors.slice(0, lastLoaderPage + 1);
    loaderCursors.push(rows[rows.length - 1].getAttribute('data-instance'));
    lastLoaderPage++;
    if (timer) window.clearTimeout(timer);
    poll();
  });
  $('loaders-first').addEventListener('click', () => {
    loaderCursors = [null];
    lastLoaderPage = 0;
    if (timer) window.clearTimeout(timer);
    poll();
  });

  token = window.sessionStorage.getItem(TOKEN_KEY);
  if (token) showConsole();
})();
