// The webhooks page (#/webhooks): every subscription with its recent deliveries — status, attempts,
// the last answer and when the next attempt is due (GET /webhooks, GET /webhooks/{id}/deliveries).
import { get, qs } from './api.js';

const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const time = (iso) =>
  iso ? `<time datetime="${esc(iso)}" title="${esc(iso)}">${esc(iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</time>` : '—';

/** Deliveries shown per webhook. */
const RECENT = 10;

function lastAnswer(d) {
  if (d.lastStatusCode === null && d.lastError === null) return d.attempts === 0 ? '<span class="muted">not sent yet</span>' : '—';
  const code = d.lastStatusCode === null ? '' : `<strong>${esc(d.lastStatusCode)}</strong> `;
  return `${code}${d.lastError ? `<span class="error-text">${esc(d.lastError)}</span>` : ''}`;
}

function deliveries(w, page) {
  if (page.items.length === 0) return '<p class="muted">No delivery yet.</p>';
  const rows = page.items
    .map(
      (d) => `<tr data-delivery="${esc(d.id)}" data-status="${esc(d.status)}">
        <td>${esc(d.id)}</td><td>${esc(d.event)}</td>
        <td><span class="badge delivery-${esc(d.status)}">${esc(d.status)}</span></td>
        <td class="num">${esc(d.attempts)}</td><td>${lastAnswer(d)}</td>
        <td>${d.status === 'pending' ? time(d.nextAttemptAt) : '—'}</td><td>${time(d.createdAt)}</td></tr>`,
    )
    .join('');
  const more = page.nextCursor ? `<p class="muted">The ${RECENT} newest; GET /webhooks/${esc(w.id)}/deliveries lists them all.</p>` : '';
  return `<table class="deliveries"><thead><tr><th>delivery</th><th>event</th><th>status</th><th class="num">attempts</th><th>last answer</th><th>next attempt</th><th>created</th></tr></thead>
    <tbody>${rows}</tbody></table>${more}`;
}

function filterText(f) {
  const parts = [f.type && `type ${f.type}`, f.group && `group ${f.group}`, f.periodicTaskId && `task ${f.periodicTaskId}`].filter(Boolean);
  return parts.length ? parts.map(esc).join(', ') : 'every job and task';
}

/** Renders the page into `main`. */
export async function webhooksView(main) {
  const list = await get(`/webhooks${qs({ limit: 100 })}`);
  const pages = await Promise.all(list.items.map((w) => get(`/webhooks/${encodeURIComponent(w.id)}/deliveries${qs({ limit: RECENT })}`)));
  const cards = list.items
    .map(
      (w, i) => `<section class="card webhook" data-webhook="${esc(w.id)}">
        <h2>Webhook ${esc(w.id)} <small class="muted">${esc(w.url)}</small></h2>
        <p>${w.events.map((e) => `<span class="badge">${esc(e)}</span>`).join(' ')} · ${filterText(w.filter)} · since ${time(w.createdAt)}</p>
        ${deliveries(w, pages[i])}
      </section>`,
    )
    .join('');
  main.innerHTML = `<h1>Webhooks</h1>
    ${list.items.length === 0 ? '<p class="muted" id="no-webhooks">No webhook is subscribed. POST /webhooks adds one (docs/webhooks.md).</p>' : cards}
    ${list.nextCursor ? '<p class="muted">More webhooks than shown (100).</p>' : ''}`;
}
