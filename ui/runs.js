// A periodic task's health and recent slots, drawn: a badge, and a strip of cells, one a slot,
// oldest on the left, coloured by outcome, each linking to its job (GET /periodic-tasks/{id}/runs).
const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

export const OUTCOMES = ['finished', 'pending', 'failed', 'dropped', 'cancelled', 'skipped', 'missed'];

export function healthBadge(h) {
  const detail = h.status === 'failing' ? ` ×${h.consecutiveFailures}` : '';
  return `<span class="badge health-${esc(h.status)}" data-health="${esc(h.status)}">${esc(h.status)}${esc(detail)}</span>`;
}

/** The strip of `runs` (newest first, as the API lists them), drawn oldest first. */
export function strip(runs, { big = false } = {}) {
  if (runs.length === 0) return '<span class="muted">no slot yet</span>';
  const cells = [...runs].reverse().map((r) => {
    const title = `${r.slot.replace('T', ' ').replace(/\.\d+Z$/, 'Z')} · ${r.outcome}${r.detail?.trigger ? ' (trigger)' : ''}${
      r.detail?.blockedBy ? ` (blocked by job ${r.detail.blockedBy})` : ''
    }${r.attempts > 1 ? ` · ${r.attempts} attempts` : ''}`;
    const cls = `cell ${esc(r.outcome)}${r.detail?.trigger ? ' trigger' : ''}`;
    return r.jobId
      ? `<a class="${cls}" href="#/jobs/${encodeURIComponent(r.jobId)}" title="${esc(title)}" data-outcome="${esc(r.outcome)}"></a>`
      : `<span class="${cls}" title="${esc(title)}" data-outcome="${esc(r.outcome)}"></span>`;
  });
  return `<span class="strip${big ? ' big' : ''}" data-slots="${runs.length}">${cells.join('')}</span>`;
}

export function legend() {
  return `<p class="legend">${OUTCOMES.map((o) => `<span class="cell ${o}"></span> ${o}`).join(' ')}</p>`;
}
