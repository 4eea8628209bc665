// The sleet dashboard: a client of the driver's /v1/ API and its stream (docs/api.md).
// Plain ES2020, no framework and no build step, so the binary can embed it as it is.
'use strict';

(() => {
  // Rolling histories cover this much of the driver's clock, and are capped in count too.
  const HISTORY_MS = 5 * 60 * 1000;
  // A plot's time axis never spans less, so a fresh job's first seconds are not stretched.
  const MIN_SPAN_MS = 30 * 1000;
  const CAP_BATCHES = 30000; // 5 minutes of 10 ms batches
  const CAP_GROUPS = 30000;
  const CAP_TICKS = 600; // one sample per stream update, about one a second
  const CAP_CHECKPOINTS = 1000;
  const CAP_PENDING = 50;
  const CAP_OFFSETS = 30;
  const TOKEN_KEY = 'sleet.token';
  const STALL_MS = 5000;
  const DASH = '—';

  // One colour per meaning, the same in every plot.
  const C = {
    rate: '#2563eb', rateBatch: '#a5c3f7', p50: '#2563eb', p99: '#ea580c',
    processing: '#0d9488', interval: '#dc2626', group: '#7c3aed',
    overhead: '#f0a3c6', overheadAvg: '#be185d',
    cpu: '#2563eb', net: '#059669', disk: '#d97706',
    recovery: '#dc2626', rebalance: '#2563eb', restart: '#7c3aed', checkpoint: '#64748b',
  };
  const PART_COLORS = {
    wait_for_close: '#cbd5e1', scheduling: '#7c3aed', source_read: '#0891b2', map_compute: '#2563eb',
    shuffle_fetch: '#059669', reduce_compute: '#84cc16', sink_write: '#d97706', checkpoint: '#db2777',
    waiting: '#94a3b8', report: '#a16207', commit: '#dc2626',
  };
  const SPARE_COLORS = ['#0f766e', '#9333ea', '#b45309', '#475569', '#e11d48'];
  const RESOURCES = ['cpu', 'net', 'disk'];

  const S = {
    token: null,
    authFailed: false,
    jobId: null,
    pinned: false,
    cluster: null,
    job: null,
    analysis: null,
    batches: [], // {t, n, ev, proc}
    groups: [], // {t, n, size, overhead, avg}
    ticks: [], // {t, eps, p50, p99}
    checkpoints: [], // {t, batch}
    offsets: [],
    offset: 0, // driver clock − this browser's clock, estimated from batch ends
    updates: 0,
    ready: false,
    pending: [],
    es: null,
    conn: 'connecting',
    lastUpdateAt: null,
    stopping: false,
  };

  const $ = (id) => document.getElementById(id);
  const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

  // ---- formatting: every figure the page shows goes through one of these ----

  function fmtInt(v) {
    return isNum(v) ? Math.round(v).toLocaleString('en-US') : DASH;
  }

  // 950, 12.3k, 1.00M: three significant figures, no more.
  function fmtCompact(v) {
    if (!isNum(v)) return DASH;
    const a = Math.abs(v);
    if (a < 999.5) return a < 9.95 && !Number.isInteger(v) ? v.toFixed(1) : String(Math.round(v));
    for (const [div, suffix] of [[1e9, 'G'], [1e6, 'M'], [1e3, 'k']]) {
      if (a >= div * 0.9995) {
        const x = v / div;
        const ax = Math.abs(x);
        return (ax >= 99.95 ? x.toFixed(0) : ax >= 9.995 ? x.toFixed(1) : x.toFixed(2)) + suffix;
      }
    }
    return String(v);
  }

  function fmtMs(v) {
    if (!isNum(v)) return DASH;
    const a = Math.abs(v);
    // Thresholds below the round numbers, so 99.96 shows as 100, not 100.0.
    if (a < 0.995) return v.toFixed(2);
    if (a < 99.95) return v.toFixed(1);
    return Math.round(v).toLocaleString('en-US');
  }

  // An interval or other whole figure: 10, not 10.0.
  function fmtMsWhole(v) {
    return isNum(v) && Number.isInteger(v) ? fmtInt(v) : fmtMs(v);
  }

  // Axis labels: no more digits than the tick step needs.
  function fmtAxis(v) {
    return Math.abs(v) >= 1000 ? fmtCompact(v).replace(/(\.\d*?)0+([kMG])$/, '$1$2').replace(/\.([kMG])$/, '$1') : String(Number(v.toPrecision(4)));
  }

  function fmtBytes(v) {
    if (!isNum(v)) return DASH;
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
  }

  function fmtPct(ratio) {
    return isNum(ratio) ? (ratio * 100).toFixed(1) : DASH;
  }

  const pad2 = (n) => String(n).padStart(2, '0');
  function fmtClock(ms) {
    if (!isNum(ms)) return DASH;
    const d = new Date(ms);
    return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  }
  function fmtDateTime(ms) {
    if (!isNum(ms)) return DASH;
    const d = new Date(ms);
    return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${fmtClock(ms)}`;
  }

  function setText(id, text) {
    const el = $(id);
    if (el && el.textContent !== text) el.textContent = text;
  }

  // A figure a test reads: its text is the formatted value, data-value the raw one ('' for null).
  function setField(name, raw, text) {
    const el = document.querySelector(`[data-field="${name}"]`);
    if (!el) return;
    if (el.textContent !== text) el.textContent = text;
    el.dataset.value = raw == null ? '' : String(raw);
    const tile = el.closest('.tile');
    if (tile) tile.classList.toggle('none', raw == null);
  }

  // ---- talking to the driver ----

  function takeToken() {
    const url = new URL(location.href);
    const fromUrl = url.searchParams.get('token');
    if (fromUrl) {
      try { sessionStorage.setItem(TOKEN_KEY, fromUrl); } catch (_) { /* storage off: keep it in memory */ }
      url.searchParams.delete('token');
      // Out of the address bar, so it is not copied along with a link or kept in history.
      history.replaceState(history.state, '', url.pathname + url.search + url.hash);
      return fromUrl;
    }
    try { return sessionStorage.getItem(TOKEN_KEY); } catch (_) { return null; }
  }

  async function api(path, init = {}) {
    const headers = { Accept: 'application/json', ...(init.headers || {}) };
    if (S.token) headers.Authorization = `Bearer ${S.token}`;
    let res;
    try {
      res = await fetch(path, { ...init, headers, cache: 'no-store' });
    } catch (_) {
      return { status: 0, ok: false, body: null, error: 'the driver did not answer' };
    }
    let body = null;
    const text = await res.text().catch(() => '');
    if (text) {
      try { body = JSON.parse(text); } catch (_) { body = null; }
    }
    if (res.status === 401) authFailed();
    const error = res.ok ? null : body && typeof body.error === 'string' ? body.error : `HTTP ${res.status}`;
    return { status: res.status, ok: res.ok, body, error };
  }

  function authFailed() {
    if (S.authFailed) return;
    S.authFailed = true;
    const refused = !!S.token;
    if (refused) {
      try { sessionStorage.removeItem(TOKEN_KEY); } catch (_) { /* nothing kept */ }
    }
    if (S.es) { S.es.close(); S.es = null; }
    setConn('unauthorized');
    showBanner(refused
      ? 'The driver refused this token: open the page as /?token=… with the right one.'
      : 'This driver needs a token: open the page as /?token=…');
  }

  function showBanner(text) {
    const el = $('banner');
    el.textContent = text;
    el.hidden = !text;
  }

  function setConn(status) {
    S.conn = status;
    const el = $('conn');
    const label = { live: 'live', connecting: 'connecting…', reconnecting: 'reconnecting…', unauthorized: 'no access', stalled: 'waiting for updates…' }[status] || status;
    el.dataset.status = status;
    if (el.textContent !== label) el.textContent = label;
  }

  function openStream() {
    if (S.authFailed) return;
    // EventSource sends no headers: the token rides in the query. A pinned page asks the
    // stream for its job, which the driver's stream follows (a driver that ignores it sends
    // the running job, and the page then keeps only the cluster).
    const query = new URLSearchParams();
    if (S.pinned && S.jobId != null) query.set('job', String(S.jobId));
    if (S.token) query.set('token', S.token);
    const url = '/v1/stream' + (query.toString() ? `?${query}` : '');
    const es = new EventSource(url);
    S.es = es;
    es.addEventListener('open', () => { if (S.es === es) setConn('live'); });
    es.addEventListener('update', (ev) => onUpdate(ev.data));
    es.addEventListener('error', () => {
      if (S.es !== es || S.authFailed) return;
      setConn('reconnecting');
      if (es.readyState === EventSource.CLOSED) {
        // The browser gives up on an answer that is not a stream (a 401, a 503): find out
        // which with a plain request, then open a new one.
        es.close();
        S.es = null;
        setTimeout(async () => {
          if (S.authFailed) return;
          await api('/v1/cluster');
          if (!S.authFailed && !S.es) openStream();
        }, 3000);
      }
    });
  }

  function onUpdate(data) {
    let u;
    try { u = JSON.parse(data); } catch (_) { return; }
    if (!u || typeof u !== 'object') return;
    S.lastUpdateAt = Date.now();
    if (S.conn !== 'live') setConn('live');
    if (!S.ready) {
      S.pending.push(u);
      if (S.pending.length > CAP_PENDING) S.pending.shift();
      return;
    }
    applyUpdate(u);
    countUpdate();
    render();
  }

  // Counted once applied, so a test that waits for it reads figures of that update.
  function countUpdate() {
    S.updates += 1;
    document.body.dataset.updates = String(S.updates);
  }

  // ---- the state the page shows ----

  function resetHistories() {
    S.batches = [];
    S.groups = [];
    S.ticks = [];
    S.checkpoints = [];
    S.job = null;
    S.analysis = null;
    S.stopping = false;
  }

  function switchJob(id) {
    S.jobId = id;
    document.body.dataset.job = String(id);
    resetHistories();
    loadHistory(id);
  }

  // Older than what is held goes in front, newer at the end: the history and the stream may
  // overlap, and either may arrive first.
  function merge(arr, items, key, make, cap) {
    if (!Array.isArray(items) || !items.length) return;
    const first = arr.length ? arr[0].n : Infinity;
    const last = arr.length ? arr[arr.length - 1].n : -Infinity;
    const older = [];
    for (const item of items) {
      if (!item || !isNum(item[key])) continue;
      const n = item[key];
      if (n > last) {
        if (!arr.length || n > arr[arr.length - 1].n) arr.push(make(item));
      } else if (n < first) {
        older.push(make(item));
      }
    }
    if (older.length) arr.unshift(...older.sort((a, b) => a.n - b.n));
    trim(arr, cap);
  }

  function trim(arr, cap) {
    if (!arr.length) return;
    const horizon = arr[arr.length - 1].t - HISTORY_MS;
    let drop = Math.max(0, arr.length - cap);
    while (drop < arr.length && !(arr[drop].t >= horizon)) drop += 1;
    if (drop > 0) arr.splice(0, drop);
  }

  // The stream sends its batches and groups as columns ({field: [values]}), the REST paths
  // as rows; the page reads rows.
  function rowsOf(columns) {
    if (Array.isArray(columns)) return columns;
    if (!columns || typeof columns !== 'object') return [];
    const fields = Object.keys(columns).filter((field) => Array.isArray(columns[field]));
    const length = fields.length ? Math.min(...fields.map((field) => columns[field].length)) : 0;
    const rows = [];
    for (let i = 0; i < length; i += 1) {
      const row = {};
      for (const field of fields) row[field] = columns[field][i];
      rows.push(row);
    }
    return rows;
  }

  function ingestBatches(list) {
    merge(S.batches, list, 'batch', (b) => ({
      n: b.batch,
      t: b.finished_at_ms,
      ev: b.events_in,
      proc: isNum(b.finished_at_ms) && isNum(b.launched_at_ms) ? b.finished_at_ms - b.launched_at_ms : null,
    }), CAP_BATCHES);
  }

  function ingestGroups(list) {
    merge(S.groups, list, 'group', (g) => ({
      n: g.group,
      t: g.completed_at_ms,
      size: g.size,
      overhead: g.overhead,
      avg: g.overhead_average,
    }), CAP_GROUPS);
  }

  // Batches end just before the update that lists them, so the largest recent
  // (batch end − arrival) is close to the offset between the two clocks.
  function noteOffset(batches) {
    if (!Array.isArray(batches) || !batches.length) return;
    let latest = -Infinity;
    for (const b of batches) if (b && isNum(b.finished_at_ms)) latest = Math.max(latest, b.finished_at_ms);
    if (!isFinite(latest)) return;
    S.offsets.push(latest - Date.now());
    if (S.offsets.length > CAP_OFFSETS) S.offsets.shift();
    S.offset = Math.max(...S.offsets);
  }

  const driverNow = () => Date.now() + S.offset;

  function sampleProgress() {
    const job = S.job;
    if (!job || job.state !== 'running' || !job.progress) return;
    const p = job.progress;
    const last = S.ticks[S.ticks.length - 1];
    const t = Math.max(driverNow(), last ? last.t + 1 : -Infinity);
    S.ticks.push({ t, eps: p.events_per_s, p50: p.window_latency_ms_p50, p99: p.window_latency_ms_p99 });
    trim(S.ticks, CAP_TICKS);
  }

  function noteCheckpoint() {
    const c = S.job && S.job.checkpoints;
    if (!c || !isNum(c.last_at_ms)) return;
    const last = S.checkpoints[S.checkpoints.length - 1];
    if (last && last.t === c.last_at_ms) return;
    if (last && c.last_at_ms < last.t) return;
    S.checkpoints.push({ t: c.last_at_ms, batch: c.last_batch });
    if (S.checkpoints.length > CAP_CHECKPOINTS) S.checkpoints.splice(0, S.checkpoints.length - CAP_CHECKPOINTS);
  }

  function applyUpdate(u) {
    if (u.cluster) S.cluster = u.cluster;
    const job = u.job;
    if (!job || !isNum(job.id)) return;
    // Unpinned, the page follows the stream to the newest job; pinned (?job=N) it keeps N.
    if (S.jobId == null || (!S.pinned && job.id !== S.jobId)) switchJob(job.id);
    if (job.id !== S.jobId) return;
    // The stream sends a job's definition (job file, query, plan) in its first update only.
    const kept = S.job && S.job.id === job.id ? S.job : {};
    S.job = Object.assign({ query: kept.query, plan: kept.plan, job_file: kept.job_file }, job);
    const batches = rowsOf(u.batches);
    noteOffset(batches);
    ingestBatches(batches);
    ingestGroups(rowsOf(u.groups));
    // The model comes in every fifth update; the others keep the last one shown.
    if (u.analysis) S.analysis = u.analysis;
    sampleProgress();
    noteCheckpoint();
  }

  async function loadHistory(id) {
    const [batches, groups] = await Promise.all([
      api(`/v1/jobs/${id}/batches`),
      api(`/v1/jobs/${id}/groups`),
    ]);
    if (S.jobId !== id) return;
    // Not for the clock offset: a stalled job's last batches may be long past.
    if (batches.ok && batches.body) ingestBatches(batches.body.batches);
    if (groups.ok && groups.body) ingestGroups(groups.body.groups);
    if (S.ready) render();
  }

  async function loadJob(id) {
    const [job] = await Promise.all([api(`/v1/jobs/${id}`), loadHistory(id)]);
    if (S.jobId !== id) return;
    if (job.ok && job.body) {
      S.job = job.body;
      sampleProgress();
      noteCheckpoint();
    } else if (job.status !== 401) {
      showBanner(`Job ${id}: ${job.error}`);
    }
    // The stream brings the running job's analysis within a second; asking here would log a
    // 404 before its first samples. A job that ended gets no updates, so ask for that one.
    if (S.job && S.job.state !== 'running') {
      const analysis = await api(`/v1/jobs/${id}/analysis`);
      if (S.jobId === id) S.analysis = analysis.ok ? analysis.body : null;
    }
  }

  async function init() {
    document.body.dataset.updates = '0';
    S.token = takeToken();
    const jobParam = new URL(location.href).searchParams.get('job');
    if (jobParam && /^\d+$/.test(jobParam)) {
      S.pinned = true;
      S.jobId = Number(jobParam);
      document.body.dataset.job = jobParam;
    }
    // Opened first, its updates held until the history is in, so none falls between.
    openStream();
    const cluster = await api('/v1/cluster');
    if (cluster.ok) S.cluster = cluster.body;
    else if (!S.authFailed) showBanner(`Cluster: ${cluster.error}`);
    if (!S.authFailed) {
      if (S.jobId == null && S.cluster && isNum(S.cluster.running_job)) S.jobId = S.cluster.running_job;
      if (S.jobId == null) {
        const jobs = await api('/v1/jobs');
        const list = jobs.ok && jobs.body && Array.isArray(jobs.body.jobs) ? jobs.body.jobs : [];
        if (list.length && isNum(list[0].id)) S.jobId = list[0].id;
      }
      if (S.jobId != null) {
        document.body.dataset.job = String(S.jobId);
        await loadJob(S.jobId);
      }
    }
    S.ready = true;
    for (const u of S.pending.splice(0)) {
      applyUpdate(u);
      countUpdate();
    }
    render();
    setInterval(watchdog, 1000);
    window.addEventListener('resize', () => {
      clearTimeout(S.resizeTimer);
      S.resizeTimer = setTimeout(render, 150);
    });
    $('whatif-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      whatIf($('whatif-change').value.trim());
    });
    $('stop').addEventListener('click', stopJob);
  }

  function watchdog() {
    if (S.conn === 'live' && S.lastUpdateAt && Date.now() - S.lastUpdateAt > STALL_MS) setConn('stalled');
  }

  // ---- actions ----

  async function stopJob() {
    const job = S.job;
    if (!job || job.state !== 'running') return;
    if (!confirm(`Stop job ${job.id} (${job.name}) at the end of its current batch?`)) return;
    const btn = $('stop');
    btn.disabled = true;
    const r = await api(`/v1/jobs/${job.id}/stop`, { method: 'POST' });
    if (r.ok) {
      S.stopping = true;
      btn.textContent = 'Stopping…';
    } else {
      btn.disabled = false;
      if (r.status !== 401) showBanner(`Stop job ${job.id}: ${r.error}`);
    }
  }

  function scenarioText(s) {
    if (typeof s === 'string') return s;
    if (!s || typeof s !== 'object') return String(s);
    return Object.entries(s).map(([k, v]) => {
      if (k === 'interval_ms') return `interval=${v}`;
      if (k === 'combine') return `combine=${v ? 'on' : 'off'}`;
      return `${k}=${v}`;
    }).join(',');
  }

  async function whatIf(change) {
    const out = $('whatif-result');
    if (!change) {
      out.innerHTML = '<p class="muted">Name a change first, e.g. <code>workers=2,cores=2</code>.</p>';
      return;
    }
    if (S.jobId == null) {
      out.innerHTML = '<p class="error">No job to ask about.</p>';
      return;
    }
    out.innerHTML = '<p class="muted">Asking the model…</p>';
    const r = await api(`/v1/jobs/${S.jobId}/whatif?change=${encodeURIComponent(change)}`);
    if (!r.ok || !r.body) {
      out.innerHTML = `<p class="error" data-field="whatif-error">${esc(r.error || 'no answer')}</p>`;
      return;
    }
    const p = r.body;
    const ms = (us) => (isNum(us) ? us / 1000 : null);
    const measured = ms(p.baseline_measured_us);
    const predicted = ms(p.predicted_batch_us);
    const interval = ms(p.interval_us);
    const top = Math.max(measured || 0, predicted || 0, interval || 0) || 1;
    const bar = (label, v, color) => `<div class="wi-bar"><span class="wi-label">${label}</span>
      <span class="wi-track"><i style="width:${isNum(v) ? (v / top) * 100 : 0}%;background:${color}"></i>
      ${isNum(interval) ? `<b class="wi-interval" style="left:${(interval / top) * 100}%" title="interval ${fmtMs(interval)} ms"></b>` : ''}</span>
      <span class="wi-value">${fmtMs(v)} ms</span></div>`;
    const scenarios = Array.isArray(p.scenarios) ? p.scenarios.map(scenarioText).join(', ') : change;
    const assumptions = Array.isArray(p.assumptions) && p.assumptions.length
      ? `<details class="assumptions"><summary>assumptions (${p.assumptions.length})</summary><ul>${p.assumptions.map((a) => `<li>${esc(a)}</li>`).join('')}</ul></details>`
      : '';
    out.innerHTML = `
      <p class="wi-head">With <code>${esc(scenarios)}</code>:</p>
      ${bar('measured', measured, C.rateBatch)}
      ${bar('predicted', predicted, C.rate)}
      <dl class="kv">
        <div><dt>predicted batch</dt><dd>${fmtMs(predicted)} ms</dd></div>
        <div><dt>measured batch</dt><dd>${fmtMs(measured)} ms</dd></div>
        <div><dt>modelled, now → then</dt><dd>${fmtMs(ms(p.baseline_modelled_us))} → ${fmtMs(ms(p.modelled_us))} ms</dd></div>
        <div><dt>interval</dt><dd>${fmtMsWhole(interval)} ms</dd></div>
        <div><dt>bottleneck</dt><dd>${esc(p.bottleneck ?? DASH)}</dd></div>
        <div><dt>stable rate</dt><dd>${fmtCompact(p.stable_rate_events_per_s)} events/s</dd></div>
        <div><dt>rate now</dt><dd>${fmtCompact(p.baseline_rate_events_per_s)} events/s</dd></div>
      </dl>${assumptions}`;
  }

  // ---- plots ----

  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    const pow = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / pow;
    const nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    return nice * pow;
  }

  function niceTicks(lo, hi, count) {
    const step = niceStep((hi - lo) / count);
    const start = Math.floor(lo / step) * step;
    const ticks = [];
    for (let v = start; v < hi + step * 0.999; v += step) ticks.push(Number(v.toPrecision(12)));
    if (ticks.length < 2) ticks.push(Number((start + step).toPrecision(12)));
    return ticks;
  }

  const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600].map((s) => s * 1000);

  function timeTicks(t0, t1, px) {
    const room = Math.max(2, Math.floor(px / 80));
    const step = TIME_STEPS.find((s) => (t1 - t0) / s <= room) || 3600000;
    const ticks = [];
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) ticks.push(t);
    return ticks;
  }

  // More points than pixel columns: keep each column's first, lowest, highest and last, so a
  // spike stays visible however many batches share a pixel.
  function decimate(points, t0, t1, cols) {
    const out = [];
    let col = null;
    let bucket = [];
    const flush = () => {
      if (!bucket.length) return;
      let lo = bucket[0];
      let hi = bucket[0];
      for (const p of bucket) {
        if (p[1] < lo[1]) lo = p;
        if (p[1] > hi[1]) hi = p;
      }
      const keep = new Set([bucket[0], lo, hi, bucket[bucket.length - 1]]);
      for (const p of bucket) if (keep.has(p)) out.push(p);
      bucket = [];
    };
    for (const p of points) {
      if (!isNum(p[1])) {
        flush();
        out.push(p);
        col = null;
        continue;
      }
      const c = Math.floor(((p[0] - t0) / (t1 - t0)) * cols);
      if (c !== col) {
        flush();
        col = c;
      }
      bucket.push(p);
    }
    flush();
    return out;
  }

  let clipSeq = 0;

  function legendHtml(series) {
    return `<div class="legend">${series.map((s) => {
      const last = [...s.points].reverse().find((p) => isNum(p[1]));
      const value = s.legendValue !== undefined ? s.legendValue : last ? s.fmt(last[1]) : DASH;
      return `<span><i style="background:${s.color}"></i>${esc(s.name)} <b>${esc(value)}</b></span>`;
    }).join('')}</div>`;
  }

  // A line chart with time on x: series [{name, color, width, points: [[t, v]], gapMs}],
  // hlines [{y, label, color}], an empty text for when nothing falls in the domain.
  function lineChart(el, opts) {
    const width = Math.max(260, Math.floor(el.clientWidth || 400));
    const height = opts.height || 170;
    const m = { l: 46, r: 12, t: 8, b: 22 };
    const pw = width - m.l - m.r;
    const ph = height - m.t - m.b;
    const [t0, t1] = opts.domain;
    const hlines = (opts.hlines || []).filter((h) => isNum(h.y));
    const series = opts.series.map((s) => ({
      ...s,
      fmt: s.fmt || opts.yFmt || fmtCompact,
      points: s.points.filter((p) => p[0] >= t0 && p[0] <= t1),
    }));
    let lo = 0;
    let hi = -Infinity;
    let any = false;
    for (const s of series) {
      for (const p of s.points) {
        if (!isNum(p[1])) continue;
        any = true;
        if (p[1] > hi) hi = p[1];
        if (p[1] < lo) lo = p[1];
      }
    }
    for (const h of hlines) hi = Math.max(hi, h.y);
    if (!isFinite(hi) || hi <= lo) hi = lo + (opts.yMinSpan || 1);
    hi = Math.max(hi, lo + (opts.yMinSpan || 0));
    hi += (hi - lo) * 0.04; // headroom: a peak never sits on the top edge
    const yt = niceTicks(lo, hi, 4);
    const y0 = yt[0];
    const y1 = yt[yt.length - 1];
    const X = (t) => m.l + ((t - t0) / (t1 - t0)) * pw;
    const Y = (v) => m.t + ph - ((v - y0) / (y1 - y0)) * ph;
    const f1 = (n) => n.toFixed(1);
    const clip = `clip${++clipSeq}`;
    let svg = `<svg class="plot" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${esc(opts.label || '')}">`;
    svg += `<defs><clipPath id="${clip}"><rect x="${m.l}" y="${m.t - 2}" width="${pw}" height="${ph + 4}"/></clipPath></defs>`;
    const yFmt = opts.yTickFmt || fmtAxis;
    for (const v of yt) {
      const y = f1(Y(v));
      svg += `<line class="grid" x1="${m.l}" x2="${m.l + pw}" y1="${y}" y2="${y}"/>`;
      svg += `<text class="tick" x="${m.l - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${esc(yFmt(v))}</text>`;
    }
    for (const t of timeTicks(t0, t1, pw)) {
      const x = f1(X(t));
      svg += `<line class="xgrid" x1="${x}" x2="${x}" y1="${m.t}" y2="${m.t + ph}"/>`;
      svg += `<text class="tick" x="${x}" y="${height - 6}" text-anchor="middle">${fmtClock(t)}</text>`;
    }
    svg += `<line class="axis" x1="${m.l}" x2="${m.l + pw}" y1="${m.t + ph}" y2="${m.t + ph}"/>`;
    svg += `<g clip-path="url(#${clip})">`;
    for (const h of hlines) {
      const y = f1(Y(h.y));
      svg += `<line class="hline" x1="${m.l}" x2="${m.l + pw}" y1="${y}" y2="${y}" stroke="${h.color}"/>`;
      svg += `<text class="hlabel" x="${m.l + 4}" y="${f1(Y(h.y) - 4)}" fill="${h.color}">${esc(h.label)}</text>`;
    }
    for (const s of series) {
      const pts = s.points.length > pw * 2 ? decimate(s.points, t0, t1, pw) : s.points;
      let d = '';
      let pen = false;
      let prevT = null;
      let drawn = 0;
      for (const [t, v] of pts) {
        if (!isNum(v)) {
          pen = false;
          continue;
        }
        if (pen && s.gapMs && prevT != null && t - prevT > s.gapMs) pen = false;
        d += `${pen ? 'L' : 'M'}${f1(X(t))} ${f1(Y(v))}`;
        pen = true;
        prevT = t;
        drawn += 1;
      }
      if (d) svg += `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="${s.width || 1.5}" stroke-linejoin="round" stroke-linecap="round"/>`;
      if (drawn && drawn <= 40) {
        for (const [t, v] of pts) if (isNum(v)) svg += `<circle cx="${f1(X(t))}" cy="${f1(Y(v))}" r="${s.width > 1.5 ? 2.5 : 2}" fill="${s.color}"/>`;
      }
    }
    svg += '</g>';
    if (!any) svg += `<text class="empty" x="${m.l + pw / 2}" y="${m.t + ph / 2}" text-anchor="middle" dominant-baseline="middle">${esc(opts.empty || 'no data yet')}</text>`;
    svg += '</svg>';
    el.innerHTML = legendHtml(series) + svg;
  }

  // The plots' shared time axis: the histories' span, 30 s to 5 min, ending now (or at the end
  // of a job that ended).
  function domain() {
    let start = Infinity;
    let end = -Infinity;
    for (const arr of [S.batches, S.groups, S.ticks]) {
      if (!arr.length) continue;
      start = Math.min(start, arr[0].t);
      end = Math.max(end, arr[arr.length - 1].t);
    }
    const job = S.job;
    if (job && job.state === 'running') end = Math.max(end, driverNow());
    else if (job && isNum(job.ended_ms)) end = isFinite(end) ? Math.max(end, job.ended_ms) : job.ended_ms;
    if (!isFinite(end)) end = driverNow();
    if (!isFinite(start)) start = end;
    start = Math.max(start, end - HISTORY_MS);
    start = Math.min(start, end - MIN_SPAN_MS);
    return [start, end];
  }

  function renderCharts() {
    const dom = domain();
    const job = S.job;
    const intervalMs = job && isNum(job.batch_interval_ms) && job.batch_interval_ms > 0 ? job.batch_interval_ms : null;
    const batchGap = Math.max(5000, (intervalMs || 0) * 5);
    const noJob = S.jobId == null ? 'no job yet' : null;

    lineChart($('chart-throughput'), {
      domain: dom,
      label: 'throughput, events per second',
      empty: noJob || 'no batch finished yet',
      series: [
        { name: 'batch ÷ interval', color: C.rateBatch, width: 1, gapMs: batchGap,
          points: intervalMs ? S.batches.map((b) => [b.t, isNum(b.ev) ? b.ev / (intervalMs / 1000) : null]) : [] },
        { name: 'last second', color: C.rate, width: 2, gapMs: 5000, points: S.ticks.map((k) => [k.t, k.eps]) },
      ],
    });

    lineChart($('chart-latency'), {
      domain: dom,
      label: 'window latency p50 and p99, ms',
      yFmt: fmtMs,
      empty: noJob || 'no window closed in the last 10 s',
      series: [
        { name: 'p50', color: C.p50, width: 2, gapMs: 5000, points: S.ticks.map((k) => [k.t, k.p50]) },
        { name: 'p99', color: C.p99, width: 2, gapMs: 5000, points: S.ticks.map((k) => [k.t, k.p99]) },
      ],
    });

    lineChart($('chart-processing'), {
      domain: dom,
      label: 'batch processing time, ms',
      yFmt: fmtMs,
      empty: noJob || 'no batch finished yet',
      hlines: intervalMs ? [{ y: intervalMs, label: `interval ${fmtMsWhole(intervalMs)} ms`, color: C.interval }] : [],
      series: [
        { name: 'per batch (finished − launched)', color: C.processing, width: 1.25, gapMs: batchGap, fmt: (v) => `${fmtMs(v)} ms`,
          points: S.batches.map((b) => [b.t, b.proc]) },
      ],
    });

    const bsp = job && job.scheduler === 'bsp';
    const noGroups = noJob || (bsp ? 'the bsp scheduler runs no groups' : 'no group completed yet');
    lineChart($('chart-group-size'), {
      domain: dom,
      label: 'group size, batches',
      empty: noGroups,
      yMinSpan: 1,
      series: [{ name: 'size', color: C.group, width: 2, gapMs: batchGap, points: S.groups.map((g) => [g.t, g.size]) }],
    });

    lineChart($('chart-overhead'), {
      domain: dom,
      label: 'coordination overhead, percent',
      yTickFmt: (v) => `${fmtAxis(v)}%`,
      empty: noGroups,
      series: [
        { name: 'per group', color: C.overhead, width: 1, gapMs: batchGap, fmt: (v) => `${v.toFixed(1)}%`,
          points: S.groups.map((g) => [g.t, isNum(g.overhead) ? g.overhead * 100 : null]) },
        { name: 'average', color: C.overheadAvg, width: 2, gapMs: batchGap, fmt: (v) => `${v.toFixed(1)}%`,
          points: S.groups.map((g) => [g.t, isNum(g.avg) ? g.avg * 100 : null]) },
      ],
    });

    renderTimeline(dom);
  }

  function renderTimeline(dom) {
    const el = $('timeline');
    const job = S.job || {};
    const recoveries = Array.isArray(job.recoveries) ? job.recoveries : [];
    const rebalances = Array.isArray(job.rebalances) ? job.rebalances : [];
    const restarts = Array.isArray(job.restarts) ? job.restarts : [];
    const lanes = [
      { name: 'recoveries', color: C.recovery, total: recoveries.length,
        marks: recoveries.map((r) => ({ t: r.detected_at_ms, title: `worker ${r.lost_worker} lost: ${r.reason}` })) },
      { name: 'rebalances', color: C.rebalance, total: rebalances.length,
        marks: rebalances.map((r) => ({ t: r.at_ms, title: `joined ${listIds(r.joined)}, left ${listIds(r.left)}` })) },
      { name: 'restarts', color: C.restart, total: restarts.length,
        marks: restarts.map((r) => ({ t: r.at_ms, title: `driver restart ${r.restart}, resumed at batch ${r.resume_batch}` })) },
      { name: 'checkpoints', color: C.checkpoint, total: job.checkpoints && isNum(job.checkpoints.taken) ? job.checkpoints.taken : S.checkpoints.length,
        marks: S.checkpoints.map((c) => ({ t: c.t, title: `checkpoint at batch ${c.batch}` })), thin: true },
    ];
    const width = Math.max(300, Math.floor(el.clientWidth || 800));
    const lane = 22;
    const m = { l: 118, r: 12, t: 6, b: 22 };
    const height = m.t + lanes.length * lane + m.b;
    const pw = width - m.l - m.r;
    const [t0, t1] = dom;
    const X = (t) => m.l + ((t - t0) / (t1 - t0)) * pw;
    const f1 = (n) => n.toFixed(1);
    let svg = `<svg class="plot" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="events on the plots' time axis">`;
    for (const t of timeTicks(t0, t1, pw)) {
      const x = f1(X(t));
      svg += `<line class="xgrid" x1="${x}" x2="${x}" y1="${m.t}" y2="${m.t + lanes.length * lane}"/>`;
      svg += `<text class="tick" x="${x}" y="${height - 6}" text-anchor="middle">${fmtClock(t)}</text>`;
    }
    lanes.forEach((ln, i) => {
      const y = m.t + i * lane;
      const mid = f1(y + lane / 2);
      svg += `<line class="lane" x1="${m.l}" x2="${m.l + pw}" y1="${mid}" y2="${mid}"/>`;
      svg += `<text class="lane-label" x="${m.l - 8}" y="${mid}" text-anchor="end" dominant-baseline="middle"><tspan fill="${ln.color}">●</tspan> ${ln.name} <tspan class="lane-count">${ln.total}</tspan></text>`;
      for (const mk of ln.marks) {
        if (!isNum(mk.t) || mk.t < t0 || mk.t > t1) continue;
        const x = f1(X(mk.t));
        const title = `<title>${esc(`${fmtClock(mk.t)} ${mk.title}`)}</title>`;
        if (ln.thin) {
          svg += `<line x1="${x}" x2="${x}" y1="${f1(y + 5)}" y2="${f1(y + lane - 5)}" stroke="${ln.color}" stroke-width="2">${title}</line>`;
        } else {
          svg += `<line x1="${x}" x2="${x}" y1="${m.t}" y2="${m.t + lanes.length * lane}" stroke="${ln.color}" stroke-opacity="0.35"/>`;
          svg += `<circle cx="${x}" cy="${mid}" r="5" fill="${ln.color}">${title}</circle>`;
        }
      }
    });
    svg += `<line class="axis" x1="${m.l}" x2="${m.l + pw}" y1="${m.t + lanes.length * lane}" y2="${m.t + lanes.length * lane}"/>`;
    svg += '</svg>';
    el.innerHTML = svg;
    renderEventList(recoveries, rebalances, restarts);
  }

  const listIds = (ids) => (Array.isArray(ids) && ids.length ? ids.join(', ') : 'none');
  const movesText = (moves) => (Array.isArray(moves) && moves.length
    ? moves.slice(0, 12).map((mv) => `p${mv[0]}: ${mv[1]}→${mv[2]}`).join(', ') + (moves.length > 12 ? `, … (${moves.length})` : '')
    : 'none');

  function renderEventList(recoveries, rebalances, restarts) {
    const items = [];
    for (const r of recoveries) {
      items.push({ t: r.detected_at_ms, html: `<span class="ev-kind" style="color:${C.recovery}">recovery</span>
        worker <b>${esc(r.lost_worker)}</b> lost (${esc(r.reason)}); resumed from ${r.checkpoint_batch == null ? 'the start' : `checkpoint at batch ${esc(r.checkpoint_batch)}`}
        at batch ${esc(r.resume_batch)}; ${fmtInt(r.rerun_batches)} batches re-run, ${fmtInt(r.reused_map_tasks)} map outputs reused;
        moves ${esc(movesText(r.moves))}; went on with workers ${esc(listIds(r.workers))}` });
    }
    for (const r of rebalances) {
      items.push({ t: r.at_ms, html: `<span class="ev-kind" style="color:${C.rebalance}">rebalance</span>
        joined ${esc(listIds(r.joined))}, left ${esc(listIds(r.left))} at checkpoint batch ${esc(r.checkpoint_batch)}, resumed at ${esc(r.resume_batch)};
        moves ${esc(movesText(r.moves))}` });
    }
    for (const r of restarts) {
      items.push({ t: r.at_ms, html: `<span class="ev-kind" style="color:${C.restart}">restart</span>
        driver restart ${esc(r.restart)}: resumed from ${r.checkpoint_batch == null ? 'the start' : `checkpoint at batch ${esc(r.checkpoint_batch)}`}
        at batch ${esc(r.resume_batch)}, attempt ${esc(r.attempt)}${r.figures_restored ? '' : '; figures counted from the restart'}` });
    }
    items.sort((a, b) => (b.t || 0) - (a.t || 0));
    const shown = items.slice(0, 20);
    const html = shown.length
      ? `<ol>${shown.map((it) => `<li><time>${fmtDateTime(it.t)}</time> ${it.html}</li>`).join('')}</ol>${items.length > shown.length ? `<p class="muted">and ${items.length - shown.length} earlier</p>` : ''}`
      : '<p class="muted">No recovery, rebalance or restart.</p>';
    const el = $('events-list');
    if (el.dataset.html !== html) {
      el.innerHTML = html;
      el.dataset.html = html;
    }
  }

  function renderBreakdown() {
    const el = $('breakdown');
    const a = S.analysis;
    const parts = a ? (Array.isArray(a.breakdown) ? a.breakdown : a.breakdown && Array.isArray(a.breakdown.parts) ? a.breakdown.parts : []) : [];
    if (!parts.length) {
      el.innerHTML = `<p class="muted placeholder">${S.jobId == null ? 'No job yet.' : 'No analysis yet: it comes with the first batches\' samples.'}</p>`;
      return;
    }
    const e2e = parts.find((p) => p.part === 'end_to_end');
    const stack = parts.filter((p) => p.part !== 'end_to_end');
    let spare = 0;
    const color = (name) => PART_COLORS[name] || SPARE_COLORS[spare++ % SPARE_COLORS.length];
    const rows = stack.map((p) => ({ name: p.part, ms: p.ms && isNum(p.ms.p50) ? p.ms.p50 : null, color: color(p.part) }));
    const total = rows.reduce((sum, r) => sum + (r.ms > 0 ? r.ms : 0), 0);
    const bar = total > 0
      ? rows.filter((r) => r.ms > 0).map((r) => `<i style="width:${((r.ms / total) * 100).toFixed(3)}%;background:${r.color}" title="${esc(r.name)} ${fmtMs(r.ms)} ms"></i>`).join('')
      : '';
    const legend = rows.map((r) => `<li${r.ms > 0 ? '' : ' class="zero"'}><i style="background:${r.color}"></i><span>${esc(r.name.replace(/_/g, ' '))}</span><b>${fmtMs(r.ms)}</b></li>`).join('');
    const e = e2e && e2e.ms ? e2e.ms : {};
    el.innerHTML = `
      <div class="bd-top">
        <div class="stack" role="img" aria-label="p50 ms per part">${bar || '<span class="muted">no part measured</span>'}</div>
        <div class="e2e"><span class="label">end to end</span>
          <span><b>${fmtMs(e.p50)}</b> p50</span><span><b>${fmtMs(e.p99)}</b> p99 ms</span></div>
      </div>
      <ul class="bd-legend">${legend}</ul>
      <p class="muted bd-foot">the newest ${fmtInt(a.batches)} batches · measured ${fmtMs(a.measured_batch_ms)} ms ·
        modelled ${fmtMs(a.modelled_batch_ms)} ms · interval ${fmtMsWhole(a.interval_ms)} ms · bottleneck ${esc(a.bottleneck ?? DASH)}</p>`;
  }

  function renderUtilization() {
    const el = $('utilization');
    const rows = S.analysis && Array.isArray(S.analysis.utilization) ? S.analysis.utilization : [];
    if (!rows.length) {
      el.innerHTML = `<p class="muted placeholder">${S.jobId == null ? 'No job yet.' : 'No utilization yet: it comes with the analysis.'}</p>`;
      return;
    }
    const byWorker = new Map();
    for (const r of rows) {
      if (!byWorker.has(r.worker)) byWorker.set(r.worker, new Map());
      byWorker.get(r.worker).set(r.resource, r);
    }
    const names = new Map(((S.cluster && S.cluster.workers) || []).map((w) => [w.id, w.name]));
    const pct = (v) => (isNum(v) ? Math.max(0, Math.min(100, v * 100)) : 0);
    let html = `<div class="util-legend">${RESOURCES.map((r) => `<span><i style="background:${C[r]}"></i>${r}</span>`).join('')}<span class="tick-key"><b></b>max</span></div>`;
    for (const worker of [...byWorker.keys()].sort((a, b) => a - b)) {
      const res = byWorker.get(worker);
      const order = [...RESOURCES.filter((r) => res.has(r)), ...[...res.keys()].filter((r) => !RESOURCES.includes(r))];
      html += `<div class="util-worker"><div class="util-name">worker ${esc(worker)}${names.has(worker) ? ` <span class="muted">${esc(names.get(worker))}</span>` : ''}</div>`;
      for (const r of order) {
        const u = res.get(r);
        html += `<div class="util-row" data-worker="${esc(worker)}" data-resource="${esc(r)}" data-value="${isNum(u.utilization_mean) ? u.utilization_mean : ''}">
          <span class="res">${esc(r)}</span>
          <span class="track"><i style="width:${pct(u.utilization_mean).toFixed(1)}%;background:${C[r] || '#64748b'}"></i>${isNum(u.utilization_max) ? `<b style="left:${pct(u.utilization_max).toFixed(1)}%" title="max ${fmtPct(u.utilization_max)}%"></b>` : ''}</span>
          <span class="pct">${isNum(u.utilization_mean) ? `${Math.round(u.utilization_mean * 100)}%` : DASH}</span>
          <span class="queue">queue ${isNum(u.queue_len_mean) ? u.queue_len_mean.toFixed(2) : DASH}</span></div>`;
      }
      html += '</div>';
    }
    el.innerHTML = html;
  }

  function renderWorkers() {
    const workers = S.cluster && Array.isArray(S.cluster.workers) ? [...S.cluster.workers].sort((a, b) => a.id - b.id) : [];
    const inJob = new Set(S.job && Array.isArray(S.job.workers) ? S.job.workers : []);
    const body = $('workers-body');
    if (!workers.length) {
      body.innerHTML = '<tr><td colspan="5" class="muted">No worker registered.</td></tr>';
      return;
    }
    body.innerHTML = workers.map((w) => {
      const age = w.heartbeat_age_ms;
      const stale = isNum(age) && age > 3000;
      return `<tr class="${stale ? 'stale' : ''}${S.job && !inJob.has(w.id) ? ' idle' : ''}" data-worker="${esc(w.id)}" title="shuffle ${esc(w.shuffle_address ?? DASH)}">
        <td>${esc(w.id)}</td><td>${esc(w.name ?? DASH)}</td><td>${esc(w.pid ?? DASH)}</td><td>${esc(w.cores ?? DASH)}</td>
        <td class="num" data-value="${isNum(age) ? age : ''}">${isNum(age) ? `${fmtInt(age)} ms` : DASH}</td></tr>`;
    }).join('');
  }

  function renderHeader() {
    const job = S.job;
    const cluster = S.cluster;
    const p = job && job.progress ? job.progress : null;
    setText('job-name', job ? job.name ?? DASH : S.jobId == null ? 'no job yet' : DASH);
    document.title = job ? `sleet · ${job.name} #${job.id} · ${job.state}` : 'sleet';
    setField('job-id', S.jobId, S.jobId == null ? DASH : String(S.jobId));
    const state = job ? job.state : null;
    setField('job-state', state, state ?? DASH);
    document.querySelector('[data-field="job-state"]').className = `state state-${state || 'none'}`;
    setText('scheduler', job ? job.scheduler ?? DASH : DASH);
    setText('interval', job && isNum(job.batch_interval_ms) ? `${fmtMsWhole(job.batch_interval_ms)} ms` : DASH);
    const nWorkers = job && Array.isArray(job.workers) ? job.workers.length : null;
    setField('workers', nWorkers, nWorkers == null ? DASH : String(nWorkers));
    const registered = cluster && Array.isArray(cluster.workers) ? cluster.workers.length : null;
    setText('workers-registered', registered != null && registered !== nWorkers ? ` of ${registered} registered` : '');
    const d = cluster && cluster.driver;
    setText('driver', d ? `${d.address ?? DASH}${d.pid != null ? ` · pid ${d.pid}` : ''}` : DASH);
    setText('started', job ? fmtDateTime(job.start_ms ?? job.submitted_ms) + (isNum(job.ended_ms) ? ` → ${fmtClock(job.ended_ms)}` : '') : DASH);
    const c = job && job.checkpoints;
    setText('checkpoints', c ? `${fmtInt(c.taken)}${isNum(c.last_batch) ? ` · last at batch ${fmtInt(c.last_batch)}` : ''}${isNum(c.last_at_ms) ? `, ${fmtClock(c.last_at_ms)}` : ''}` : DASH);
    setText('late-rows', p ? fmtInt(p.late_rows_dropped) : DASH);
    const st = p && p.state;
    $('state-box').hidden = !st;
    if (st) setText('state-size', `${fmtInt(st.state_keys)} keys · ${fmtBytes(st.state_bytes)}`);
    setText('last-update', S.lastUpdateAt ? fmtClock(S.lastUpdateAt) : DASH);
    setText('query', job && job.query != null ? job.query : job ? '— (a job file or a built-in job)' : DASH);
    setText('plan', job && job.plan != null ? job.plan : DASH);

    const stop = $('stop');
    const running = !!job && job.state === 'running';
    stop.hidden = !running;
    if (!running || !S.stopping) {
      stop.disabled = false;
      stop.textContent = 'Stop job';
    }

    // Notes about the job: why it failed, what it waits for, which operator is full.
    const notes = [];
    if (job && job.state === 'failed' && job.reason) notes.push(['error', `Failed: ${job.reason}`]);
    if (p && p.source_waiting) notes.push(['warn', `Source waiting: ${p.source_waiting}`]);
    if (p && Array.isArray(p.state_full) && p.state_full.length) notes.push(['warn', `At max_keys, refusing new keys: ${p.state_full.join(', ')}`]);
    if (S.pinned && cluster && isNum(cluster.running_job) && cluster.running_job !== S.jobId) {
      notes.push(['info', `Job ${cluster.running_job} is running: <a href="?job=${cluster.running_job}">show it</a>.`]);
    }
    const notesEl = $('notes');
    const html = notes.map(([kind, text]) => `<p class="note note-${kind}">${kind === 'info' ? text : esc(text)}</p>`).join('');
    if (notesEl.dataset.html !== html) {
      notesEl.innerHTML = html;
      notesEl.dataset.html = html;
    }
    notesEl.hidden = !notes.length;
  }

  function renderTiles() {
    const job = S.job;
    const p = job && job.progress ? job.progress : null;
    const a = S.analysis;
    const get = (k) => (p && p[k] != null ? p[k] : null);
    setField('events-per-s', get('events_per_s'), fmtCompact(get('events_per_s')));
    setField('latency-p50', get('window_latency_ms_p50'), fmtMs(get('window_latency_ms_p50')));
    setField('latency-p99', get('window_latency_ms_p99'), fmtMs(get('window_latency_ms_p99')));
    setField('lag-ms', get('lag_ms'), fmtInt(get('lag_ms')));
    setField('batches-done', get('batches_done'), fmtInt(get('batches_done')));
    setField('dead-letters', get('dead_letters'), fmtInt(get('dead_letters')));
    setField('group-size', get('group_size'), fmtInt(get('group_size')));
    setField('overhead', get('overhead'), fmtPct(get('overhead')));
    const bottleneck = get('bottleneck') ?? (a && a.bottleneck != null ? a.bottleneck : null);
    setField('bottleneck', bottleneck, bottleneck ?? DASH);

    setText('events-total', p && isNum(p.events_in) ? `${fmtCompact(p.events_in)} events in` : '');
    setText('batches-sub', job && isNum(job.batch_interval_ms) ? `every ${fmtMsWhole(job.batch_interval_ms)} ms` : '');
    setText('group-sub', !job ? '' : job.scheduler === 'bsp' ? 'none under bsp' : 'batches a group');
    setText('bottleneck-sub', a && isNum(a.measured_batch_ms)
      ? `batch ${fmtMs(a.measured_batch_ms)} / ${fmtMsWhole(a.interval_ms)} ms`
      : 'of recent batches');
  }

  // One panel's bug must not blank the others.
  function safe(fn) {
    try { fn(); } catch (err) { console.error('sleet dashboard:', err); }
  }

  function render() {
    safe(renderHeader);
    safe(renderTiles);
    safe(renderCharts);
    safe(renderBreakdown);
    safe(renderUtilization);
    safe(renderWorkers);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
