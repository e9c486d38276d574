// jobclock operator console: hash routes (#/, #/jobs?…, #/jobs/<id>, #/tasks, #/tasks/<id>, #/webhooks)
// rendered from the public JSON API. No framework: template strings and one delegated listener.
import { ApiError, get, patch, post, qs, token } from './api.js';
import { graphSvg } from './graph.js';
import { healthBadge, legend, strip } from './runs.js';
import { webhooksView } from './webhooks.js';

const main = document.getElementById('main');
const notice = document.getElementById('notice');

const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const enc = encodeURIComponent;
/** Jobs per page of the jobs view: a page with fewer and a next cursor ended early (see the README). */
const JOBS_PAGE = 50;

function ago(iso) {
  if (!iso) return '—';
  return duration(Date.now() - Date.parse(iso));
}
function duration(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}
const time = (iso) =>
  iso ? `<time datetime="${esc(iso)}" title="${esc(iso)}">${esc(iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</time>` : '—';
const json = (v) => (v === null || v === undefined ? '—' : `<code>${esc(JSON.stringify(v))}</code>`);

function say(message, kind = 'info') {
  notice.hidden = false;
  notice.className = kind;
  notice.innerHTML = message;
}
function quiet() {
  notice.hidden = true;
  notice.textContent = '';
}

/** A failed call as the notice shows it: 403 names the role that may act. */
function problemText(err) {
  if (err instanceof ApiError) {
    const p = err.problem ?? {};
    const title = err.status === 403 ? 'Not allowed' : (p.title ?? `HTTP ${err.status}`);
    return `<strong>${esc(title)}</strong> (${err.status}): ${esc(p.detail ?? err.message)}`;
  }
  return `<strong>Error</strong>: ${esc(err?.message ?? err)}`;
}

// ---------------------------------------------------------------------------------------------
// Token prompt

function tokenForm(message) {
  main.innerHTML = `
    <section class="card narrow">
      <h1>Token</h1>
      <p>${esc(message)}</p>
      <form id="token-form">
        <label>Bearer token <input name="token" type="password" autocomplete="off" required autofocus /></label>
        <button type="submit">Use token</button>
      </form>
      <p class="muted">Kept only in this tab (sessionStorage). A reader token may look; actions need an admin token.</p>
    </section>`;
}

function showWho() {
  const who = document.getElementById('who');
  who.innerHTML = token.get() ? `token set · <button data-action="forget-token" class="link">forget</button>` : '';
}

// ---------------------------------------------------------------------------------------------
// Views

const views = {
  async overview(_params, _arg, out) {
    const [types, groups, tp] = await Promise.all([
      get('/types?limit=1000'),
      get('/groups?limit=1000'),
      get('/stats/throughput?minutes=30'),
    ]);
    const row = (kind, v) => {
      const name = v[kind];
      const link = `#/jobs${qs({ [kind]: name })}`;
      return `<tr data-${kind}="${esc(name)}">
        <td><a href="${esc(link)}">${esc(name)}</a>${v.paused ? ' <span class="badge paused">paused</span>' : ''}</td>
        <td class="num">${v.counts.queued}</td><td class="num">${v.counts.scheduled}</td><td class="num">${v.counts.running}</td>
        <td class="num">${v.oldestQueuedAt ? ago(v.oldestQueuedAt) : '—'}</td>
        <td>${[v.concurrency !== null ? `concurrency ${v.concurrency}` : '', v.rate ? `rate ${esc(v.rate)}` : ''].filter(Boolean).join(', ') || '—'}</td>
        <td class="actions">
          ${kind === 'type' ? `<button data-action="${v.paused ? 'resume' : 'pause'}" data-kind="types" data-name="${esc(name)}">${v.paused ? 'Resume' : 'Pause'}</button>` : `<button data-action="${v.paused ? 'resume' : 'pause'}" data-kind="groups" data-name="${esc(name)}">${v.paused ? 'Resume' : 'Pause'}</button>`}
          <a href="#/jobs${esc(qs({ [kind]: name, state: 'failed' }))}">failed</a>
          ${kind === 'type' ? `<button data-action="retry-failed" data-type="${esc(name)}">Retry failed</button>` : ''}
        </td></tr>`;
    };
    const table = (kind, items) =>
      items.length === 0
        ? `<p class="muted">No ${kind} has open jobs or a policy.</p>`
        : `<table id="${kind}s"><thead><tr><th>${kind}</th><th class="num">queued</th><th class="num">scheduled</th><th class="num">running</th><th class="num">oldest waiting</th><th>limits</th><th></th></tr></thead>
          <tbody>${items.map((v) => row(kind, v)).join('')}</tbody></table>`;
    out.innerHTML = `
      <section><h1>Throughput <small class="muted">last 30 minutes, per minute</small></h1>${chart(tp.buckets)}</section>
      <section><h1>Types</h1>${table('type', types.items)}${types.nextCursor ? '<p class="muted">More types than shown (1000).</p>' : ''}</section>
      <section><h1>Groups</h1>${table('group', groups.items)}${groups.nextCursor ? '<p class="muted">More groups than shown (1000).</p>' : ''}</section>`;
  },

  async jobs(params, _arg, out) {
    const filter = {};
    for (const k of ['state', 'type', 'group', 'periodicTaskId', 'q', 'argsContains', 'worker'])
      if (params.get(k)) filter[k] = params.get(k);
    const cursor = params.get('cursor') ?? undefined;
    let page;
    let refused = '';
    try {
      page = await get(`/jobs${qs({ ...filter, limit: JOBS_PAGE, cursor })}`);
    } catch (err) {
      // a filter the API refuses (400) is shown beside the form, so it can be corrected
      if (!(err instanceof ApiError) || err.status !== 400) throw err;
      page = { items: [], nextCursor: null };
      refused = `<p class="error" id="refused">${problemText(err)}</p>`;
    }
    const states = ['', 'waiting', 'queued', 'running', 'finished', 'failed', 'dropped', 'cancelled'];
    const input = (k, label, ph = '') =>
      `<label>${label} <input name="${k}" value="${esc(filter[k] ?? '')}" placeholder="${esc(ph)}" /></label>`;
    const retryable = ['failed', 'dropped', 'cancelled'].includes(filter.state);
    out.innerHTML = `
      <h1>Jobs</h1>
      <form id="job-filter" class="filters">
        <label>state <select name="state">${states.map((s) => `<option value="${s}"${filter.state === s ? ' selected' : ''}>${s || 'any'}</option>`).join('')}</select></label>
        ${input('type', 'type')}${input('group', 'group')}${input('periodicTaskId', 'periodic task')}
        ${input('q', 'text', 'in args, subject, error')}${input('argsContains', 'args contain', '{"customer":42}')}
        <button type="submit">Search</button>
        ${retryable ? `<button type="button" data-action="bulk-retry">Retry all matching</button>` : ''}
      </form>
      ${refused}
      ${
        refused
          ? ''
          : page.items.length === 0
            ? `<p class="muted" id="no-jobs">${page.nextCursor ? 'No job matches in this part.' : 'No job matches.'}</p>`
            : `<table id="jobs"><thead><tr><th>id</th><th>type</th><th>group</th><th>state</th><th class="num">attempts</th><th>run at</th><th>created</th><th>error</th></tr></thead><tbody>
        ${page.items
          .map(
            (
              j,
            ) => `<tr data-id="${esc(j.id)}"><td><a href="#/jobs/${enc(j.id)}">${esc(j.id)}</a></td><td>${esc(j.type)}</td><td>${esc(j.group)}</td>
            <td><span class="badge ${esc(j.state)}">${esc(j.state)}</span></td><td class="num">${j.attempts}/${j.maxAttempts}</td>
            <td>${time(j.runAt)}</td><td>${time(j.createdAt)}</td><td class="clip">${j.error ? esc(JSON.stringify(j.error)) : ''}</td></tr>`,
          )
          .join('')}</tbody></table>`
      }
      ${
        page.nextCursor && page.items.length < JOBS_PAGE
          ? '<p class="muted" id="ended-early">This page ended early: a text or args search looks through a large backlog of queued jobs a part at a time. There may be more matches on the next page.</p>'
          : ''
      }
      <p>${cursor ? `<a href="#/jobs${esc(qs(filter))}">First page</a> ` : ''}${page.nextCursor ? `<a id="next-page" href="#/jobs${esc(qs({ ...filter, cursor: page.nextCursor }))}">Next page →</a>` : ''}</p>`;
  },

  async job(_params, id, out) {
    const [job, events, graph] = await Promise.all([
      get(`/jobs/${enc(id)}`),
      get(`/jobs/${enc(id)}/events`),
      get(`/jobs/${enc(id)}/graph`),
    ]);
    const field = (k, v) => `<tr><th>${k}</th><td>${v}</td></tr>`;
    out.innerHTML = `
      <h1>Job ${esc(job.id)} <span class="badge ${esc(job.state)}" id="job-state">${esc(job.state)}</span></h1>
      <p class="actions">
        <button data-action="retry" data-id="${esc(job.id)}" ${['failed', 'dropped', 'cancelled'].includes(job.state) ? '' : 'disabled'}>Retry</button>
        <button data-action="cancel" data-id="${esc(job.id)}" ${['waiting', 'queued', 'running'].includes(job.state) ? '' : 'disabled'}>Cancel</button>
      </p>
      <div class="cols">
        <table class="fields">
          ${field('type', `<a href="#/jobs${esc(qs({ type: job.type }))}">${esc(job.type)}</a>`)}
          ${field('group', `<a href="#/jobs${esc(qs({ group: job.group }))}">${esc(job.group)}</a>`)}
          ${field('periodic task', job.periodicTaskId ? `<a href="#/tasks/${enc(job.periodicTaskId)}">${esc(job.periodicTaskId)}</a>` : '—')}
          ${field('attempts', `${job.attempts} of ${job.maxAttempts}`)}
          ${field('priority', esc(job.priority))}
          ${field('run at', time(job.runAt))}${field('start by', time(job.startBy))}${field('scheduled at', time(job.scheduledAt))}
          ${field('worker', esc(job.worker ?? '—'))}${field('started', time(job.startedAt))}${field('finished', time(job.finishedAt))}
          ${field('created', time(job.createdAt))}${field('subject', esc(job.subject ?? '—'))}${field('unique key', esc(job.uniqueKey ?? '—'))}
          ${field('after', job.after.length ? job.after.map((a) => `<a href="#/jobs/${enc(a)}">${esc(a)}</a>`).join(', ') : '—')}
          ${field('args', json(job.args))}${field('checkpoint', json(job.checkpoint))}${field('result', json(job.result))}${field('error', json(job.error))}
        </table>
      </div>
      ${job.after.length || graph.dependents.length ? `<h2>Dependencies</h2>${graphSvg({ ...graph, type: job.type })}` : ''}
      <h2>Attempts</h2>
      ${attempts(events.items)}
      <h2>History</h2>
      <table id="history"><thead><tr><th>at</th><th>event</th><th class="num">attempt</th><th>worker</th><th>by</th><th>detail</th></tr></thead><tbody>
        ${events.items
          .map(
            (e) =>
              `<tr class="ev-${esc(e.kind)}"><td>${time(e.at)}</td><td>${esc(e.kind)}</td><td class="num">${e.attempt ?? ''}</td><td>${esc(e.worker ?? '')}</td><td>${esc(e.actor ?? '')}</td><td class="clip">${e.detail == null ? '' : esc(JSON.stringify(e.detail))}</td></tr>`,
          )
          .join('')}
      </tbody></table>`;
  },

  async tasks(params, _arg, out) {
    const cursor = params.get('cursor') ?? undefined;
    const filter = {
      task: params.get('task') || undefined,
      enabled: params.get('enabled') || undefined,
      health: params.get('health') || undefined,
    };
    // with each task's last 24 slots, read for the whole page in one request
    const page = await get(`/periodic-tasks${qs({ ...filter, limit: 100, cursor, runs: 24 })}`);
    out.innerHTML = `
      <h1>Periodic tasks</h1>
      <form id="task-filter" class="filters">
        <label>job type <input name="task" value="${esc(filter.task ?? '')}" /></label>
        <label>enabled <select name="enabled">${['', 'true', 'false'].map((v) => `<option value="${v}"${filter.enabled === v ? ' selected' : ''}>${v || 'any'}</option>`).join('')}</select></label>
        <label>health <select name="health">${['', 'ok', 'failing', 'overdue', 'disabled'].map((v) => `<option value="${v}"${filter.health === v ? ' selected' : ''}>${v || 'any'}</option>`).join('')}</select></label>
        <button type="submit">Filter</button>
      </form>
      ${
        page.items.length === 0
          ? '<p class="muted">No periodic task.</p>'
          : `<table id="tasks"><thead><tr><th>id</th><th>health</th><th>recent slots</th><th>job type</th><th>schedule</th><th>next run</th><th>last run</th><th>lateness</th><th></th></tr></thead><tbody>
        ${page.items.map(taskRow).join('')}</tbody></table>${legend()}`
      }
      <p>${page.nextCursor ? `<a id="next-page" href="#/tasks${esc(qs({ ...filter, cursor: page.nextCursor }))}">Next page →</a>` : ''}</p>`;
  },

  async task(_params, id, out) {
    const [t, runs] = await Promise.all([get(`/periodic-tasks/${enc(id)}`), get(`/periodic-tasks/${enc(id)}/runs?limit=60`)]);
    let preview;
    try {
      preview = await post('/schedules/preview', {
        schedule: t.schedule,
        timezone: t.timezone ?? undefined,
        firstRunAt: t.firstRunAt ?? undefined,
        count: 5,
      });
    } catch (err) {
      preview = { kind: '?', next: [], error: err };
    }
    const field = (k, v) => `<tr><th>${k}</th><td>${v}</td></tr>`;
    out.innerHTML = `
      <h1>Periodic task ${esc(t.id)} ${healthBadge(t.health)}</h1>
      <p class="actions">${taskActions(t)} <a href="#/jobs${esc(qs({ periodicTaskId: t.id }))}">its jobs</a></p>
      <h2>Recent slots</h2>
      <p id="slots">${strip(runs.items, { big: true })}</p>${legend()}
      <table class="fields">
        ${field('schedule', `${scheduleText(t)} <span class="muted">(${esc(preview.kind)}${t.timezone ? `, ${esc(t.timezone)}` : ''})</span>`)}
        ${field('job type', `<a href="#/jobs${esc(qs({ type: t.task }))}">${esc(t.task)}</a>`)}
        ${field('group', esc(t.group ?? '—'))}${field('next run', time(t.nextRun))}${field('last run', time(t.lastRun))}
        ${field('lateness', lateness(t))}${field('misfire policy', esc(t.misfirePolicy))}${field('concurrency policy', esc(t.concurrencyPolicy))}
        ${field('tolerance', esc(t.effectiveTolerance ?? '—'))}${field('owner', esc(t.owner ?? '—'))}${field('args', json(t.args))}
        ${field('last success', time(t.health.lastSuccessAt))}${field('last failure', time(t.health.lastFailureAt))}
        ${field('failures in a row', esc(t.health.consecutiveFailures))}
      </table>
      <h2>When runs go wrong</h2>
      ${leaveAloneForm(t)}
      <h2>Slots</h2>
      <table id="runs"><thead><tr><th>slot</th><th>outcome</th><th>job</th><th class="num">attempts</th><th>finished</th><th>detail</th></tr></thead><tbody>
        ${runs.items
          .slice(0, 20)
          .map(
            (r) =>
              `<tr><td>${time(r.slot)}</td><td><span class="badge ${esc(r.outcome)}">${esc(r.outcome)}</span></td><td>${r.jobId ? `<a href="#/jobs/${enc(r.jobId)}">${esc(r.jobId)}</a>` : ''}</td><td class="num">${r.attempts ?? ''}</td><td>${r.finishedAt ? time(r.finishedAt) : ''}</td><td class="clip">${Object.keys(r.detail).length ? esc(JSON.stringify(r.detail)) : ''}</td></tr>`,
          )
          .join('')}
      </tbody></table>
      <h2>Next 5 runs</h2>
      ${preview.error ? `<p>${problemText(preview.error)}</p>` : `<ol id="next-runs">${preview.next.map((n) => `<li>${time(n)} <span class="muted">in ${duration(Date.parse(n) - Date.now())}</span></li>`).join('')}</ol>`}`;
  },
};

function taskActions(t) {
  return `${t.enabled ? `<button data-action="disable" data-task="${esc(t.id)}">Disable</button>` : `<button data-action="enable" data-task="${esc(t.id)}">Enable</button>`}
    <button data-action="trigger" data-task="${esc(t.id)}">Trigger now</button>`;
}

/**
 * A few common cron shapes in words ("every day at 03:00"); null for the rest, which the page shows
 * as the expression only. Interval schedules ("every 5m") and calendar events read well as they are.
 */
function inWords(schedule) {
  const f = schedule.trim().split(/\s+/);
  if (f.length !== 5) return null;
  const [min, hour, dom, mon, dow] = f;
  const num = (v) => /^\d+$/.test(v);
  const pad = (v) => v.padStart(2, '0');
  if (dom !== '*' || mon !== '*') return null;
  const days = dow === '*' ? 'every day' : /^[A-Za-z0-9,-]+$/.test(dow) ? `on ${dow.replace(/,/g, ', ')}` : null;
  if (!days) return null;
  if (num(min) && num(hour)) return `${days} at ${pad(hour)}:${pad(min)}`;
  if (num(min) && hour === '*') return `${dow === '*' ? 'every hour' : `${days}, every hour`} at minute ${min}`;
  const step = /^\*\/(\d+)$/.exec(min);
  if (step && hour === '*') return `${dow === '*' ? '' : `${days}, `}every ${step[1]} minutes`;
  if (min === '*' && hour === '*') return `${dow === '*' ? '' : `${days}, `}every minute`;
  return null;
}

function scheduleText(t) {
  const words = inWords(t.schedule);
  return `${words ? `${esc(words)} <span class="muted">·</span> ` : ''}<code>${esc(t.schedule)}</code>`;
}

function lateness(t) {
  if (!t.enabled || !t.nextRun) return '—';
  const late = Date.now() - Date.parse(t.nextRun);
  return late > 1000 ? `<span class="late">${duration(late)} late</span>` : 'on time';
}

function taskRow(t) {
  return `<tr data-task="${esc(t.id)}"><td><a href="#/tasks/${enc(t.id)}">${esc(t.id)}</a></td><td>${healthBadge(t.health)}</td><td>${strip(t.recentRuns ?? [])}</td>
    <td>${esc(t.task)}</td><td>${scheduleText(t)}${t.timezone ? ` <span class="muted">${esc(t.timezone)}</span>` : ''}</td>
    <td>${time(t.nextRun)}</td><td>${time(t.lastRun)}</td><td>${lateness(t)}</td><td class="actions">${taskActions(t)}</td></tr>`;
}

/** The task's fields of "Periodic tasks you can leave alone", editable by an admin. */
function leaveAloneForm(t) {
  const f = (name, label, value, ph, type = 'text') =>
    `<label>${label} <input name="${name}" type="${type}" value="${esc(value ?? '')}" placeholder="${esc(ph)}" /></label>`;
  return `<form id="task-edit" class="filters" data-task="${esc(t.id)}">
    ${f('maxAttempts', 'attempts per run', t.maxAttempts, '1', 'number')}
    ${f('catchUpWindow', 'catch-up window', t.catchUpWindow, 'none, e.g. 1h')}
    ${f('alertAfter', 'overdue after', t.alertAfter, 'never, e.g. 2h')}
    ${f('endAt', 'ends at', t.endAt, 'never, e.g. 2027-01-01T00:00:00.000Z')}
    <button type="submit">Save</button></form>`;
}

/** Each attempt from the history: leased → its outcome. */
function attempts(events) {
  const rows = [];
  for (const e of events) {
    if (e.kind === 'leased') rows.push({ attempt: e.attempt, worker: e.worker, start: e.at, end: null, outcome: 'running', error: null });
    else if (
      e.attempt !== null &&
      rows.length > 0 &&
      ['finished', 'failed', 'requeued', 'lease-expired', 'timed-out', 'given-back', 'dropped', 'cancelled'].includes(e.kind)
    ) {
      const r = [...rows].reverse().find((x) => x.attempt === e.attempt && x.end === null);
      if (r) {
        r.end = e.at;
        r.outcome = e.kind;
        r.error = e.detail?.error ?? (e.kind === 'finished' ? null : e.detail);
      }
    }
  }
  if (rows.length === 0) return '<p class="muted">Never leased.</p>';
  return `<table id="attempts"><thead><tr><th class="num">#</th><th>worker</th><th>start</th><th>end</th><th>outcome</th><th>error</th></tr></thead><tbody>
    ${rows.map((r) => `<tr><td class="num">${r.attempt ?? ''}</td><td>${esc(r.worker ?? '')}</td><td>${time(r.start)}</td><td>${time(r.end)}</td><td><span class="badge ${esc(r.outcome)}">${esc(r.outcome)}</span></td><td class="clip">${r.error == null ? '' : esc(JSON.stringify(r.error))}</td></tr>`).join('')}
  </tbody></table>`;
}

/** Throughput as an inline SVG bar chart: finished up, failed in red on top. */
function chart(buckets) {
  const w = 600,
    h = 120,
    pad = 18;
  const max = Math.max(1, ...buckets.map((b) => b.finished + b.failed));
  const bw = (w - pad) / Math.max(1, buckets.length);
  const total = buckets.reduce((s, b) => s + b.finished, 0);
  const failed = buckets.reduce((s, b) => s + b.failed, 0);
  const bars = buckets
    .map((b, i) => {
      const x = pad + i * bw;
      const fh = ((h - pad) * b.finished) / max;
      const xh = ((h - pad) * b.failed) / max;
      return `<g><title>${esc(b.at)}: ${b.finished} finished, ${b.failed} failed</title>
        <rect x="${x.toFixed(1)}" y="${(h - pad - fh).toFixed(1)}" width="${(bw - 1).toFixed(1)}" height="${fh.toFixed(1)}" class="ok"/>
        <rect x="${x.toFixed(1)}" y="${(h - pad - fh - xh).toFixed(1)}" width="${(bw - 1).toFixed(1)}" height="${xh.toFixed(1)}" class="bad"/></g>`;
    })
    .join('');
  return `<svg id="throughput" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="jobs per minute">
      <text x="0" y="10" class="axis">${max}</text><text x="0" y="${h - pad}" class="axis">0</text>
      <line x1="${pad}" y1="${h - pad}" x2="${w}" y2="${h - pad}" class="axis"/>${bars}
      <text x="${pad}" y="${h - 2}" class="axis">−${buckets.length} min</text><text x="${w - 30}" y="${h - 2}" class="axis">now</text>
    </svg><p class="muted">${total} finished, ${failed} failed</p>`;
}

// ---------------------------------------------------------------------------------------------
// Router and actions

function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query = ''] = hash.split('?');
  const params = new URLSearchParams(query);
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { name: 'overview', view: views.overview, params, nav: 'overview' };
  if (parts[0] === 'types' || parts[0] === 'groups') return { name: 'overview', view: views.overview, params, nav: 'overview' };
  if (parts[0] === 'jobs' && parts[1]) return { name: 'job', view: views.job, params, arg: parts[1], nav: 'jobs' };
  if (parts[0] === 'jobs') return { name: 'jobs', view: views.jobs, params, nav: 'jobs' };
  if (parts[0] === 'tasks' && parts[1]) return { name: 'task', view: views.task, params, arg: parts[1], nav: 'tasks' };
  if (parts[0] === 'tasks') return { name: 'tasks', view: views.tasks, params, nav: 'tasks' };
  if (parts[0] === 'webhooks') return { name: 'webhooks', view: (_p, _a, out) => webhooksView(out), params, nav: 'webhooks' };
  return {
    name: 'missing',
    view: async (_p, _a, out) => (out.innerHTML = '<p>No such page. <a href="#/">Overview</a></p>'),
    params,
    nav: '',
  };
}

let rendering = 0;
async function render() {
  const r = route();
  const mine = ++rendering;
  const hash = location.hash;
  for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('current', a.dataset.nav === r.nav);
  showWho();
  document.body.dataset.page = r.name;
  document.body.removeAttribute('data-ready');
  // The view fills a page of its own, shown only if no later render began meanwhile: a render
  // started before the hash changed (say, after an action) may finish after the next one.
  const out = document.createElement('div');
  try {
    await r.view(r.params, r.arg, out);
    if (mine !== rendering) return;
    main.replaceChildren(...out.childNodes);
  } catch (err) {
    if (mine !== rendering) return;
    if (err instanceof ApiError && err.status === 401) {
      tokenForm(token.get() ? 'The token was not accepted. Enter another.' : 'This service asks for a token.');
    } else {
      main.innerHTML = `<p class="error">${problemText(err)}</p>`;
    }
  }
  if (mine !== rendering) return;
  document.body.dataset.rendered = hash;
  document.body.dataset.ready = 'true';
}

async function act(fn, done) {
  quiet();
  try {
    const out = await fn();
    if (done) say(esc(done(out)), 'ok');
    await render();
  } catch (err) {
    say(problemText(err), 'error');
  }
}

document.addEventListener('click', (ev) => {
  const el = ev.target.closest('[data-action]');
  if (!el) return;
  const d = el.dataset;
  switch (d.action) {
    case 'forget-token':
      token.clear();
      void render();
      return;
    case 'pause':
    case 'resume':
      void act(
        () => patch(`/${d.kind}/${enc(d.name)}`, { paused: d.action === 'pause' }),
        () => `${d.name} ${d.action === 'pause' ? 'paused' : 'resumed'}.`,
      );
      return;
    case 'retry-failed':
      if (!confirm(`Retry every failed job of ${d.type}?`)) return;
      void act(
        () => post('/jobs/retry', { filter: { type: d.type, state: 'failed' } }),
        (r) => `${r.affected} failed job(s) of ${d.type} queued again.`,
      );
      return;
    case 'bulk-retry': {
      const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
      const filter = {};
      for (const [k, v] of params) if (k !== 'cursor' && v) filter[k] = k === 'argsContains' ? JSON.parse(v) : v;
      if (!confirm(`Retry every job matching ${JSON.stringify(filter)}?`)) return;
      void act(
        () => post('/jobs/retry', { filter }),
        (r) => `${r.affected} job(s) queued again.`,
      );
      return;
    }
    case 'retry':
      void act(
        () => post(`/jobs/${enc(d.id)}/retry`),
        () => `Job ${d.id} queued again.`,
      );
      return;
    case 'cancel':
      void act(
        () => post(`/jobs/${enc(d.id)}/cancel`),
        () => `Job ${d.id} cancelled.`,
      );
      return;
    case 'enable':
    case 'disable':
      void act(
        () => patch(`/periodic-tasks/${enc(d.task)}`, { enabled: d.action === 'enable' }),
        () => `${d.task} ${d.action}d.`,
      );
      return;
    case 'trigger':
      void act(
        () => post(`/periodic-tasks/${enc(d.task)}/trigger`),
        (j) => `${d.task} triggered${j?.id ? `: job ${j.id}` : ''}.`,
      );
      return;
  }
});

document.addEventListener('submit', (ev) => {
  const form = ev.target;
  ev.preventDefault();
  const data = Object.fromEntries(new FormData(form));
  if (form.id === 'token-form') {
    token.set(String(data.token).trim());
    void render();
  } else if (form.id === 'job-filter') {
    location.hash = `#/jobs${qs(data)}`;
  } else if (form.id === 'task-filter') {
    location.hash = `#/tasks${qs(data)}`;
  } else if (form.id === 'task-edit') {
    const body = {
      maxAttempts: Number(data.maxAttempts || 1),
      catchUpWindow: String(data.catchUpWindow).trim() || null,
      alertAfter: String(data.alertAfter).trim() || null,
      endAt: String(data.endAt).trim() || null,
    };
    void act(
      () => patch(`/periodic-tasks/${enc(form.dataset.task)}`, body),
      () => `${form.dataset.task} saved.`,
    );
  }
});

window.addEventListener('hashchange', () => {
  quiet();
  void render();
});
void render();
