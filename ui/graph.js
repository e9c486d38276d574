// A job's neighbours in its dependency graph, drawn as SVG: the jobs it runs after on the left,
// the job in the middle, the jobs that run after it on the right, each coloured by its state and
// linked to its page.
const escape = (v) =>
  String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

const W = 210;
const H = 34;
const GAP = 12;
const COLS = [0, 300, 600];

function node(n, x, y, self = false) {
  const label = `${n.id} · ${n.type}`;
  const text = label.length > 28 ? `${label.slice(0, 27)}…` : label;
  const box = `<rect x="${x}" y="${y}" width="${W}" height="${H}" rx="4" class="node ${escape(n.state)}${self ? ' self' : ''}"/>
    <text x="${x + 8}" y="${y + 14}">${escape(text)}</text><text x="${x + 8}" y="${y + 28}" class="state">${escape(n.state)}</text>`;
  return self
    ? `<g class="graph-self">${box}</g>`
    : `<a href="#/jobs/${encodeURIComponent(n.id)}" class="graph-node" data-id="${escape(n.id)}">${box}</a>`;
}

/** The SVG of GET /jobs/{id}/graph's answer, or '' when the job is in no graph. */
export function graphSvg(g) {
  if (g.dependencies.length === 0 && g.dependents.length === 0) return '';
  const rows = Math.max(g.dependencies.length + (g.more.dependencies ? 1 : 0), g.dependents.length + (g.more.dependents ? 1 : 0), 1);
  const height = rows * (H + GAP);
  const yOf = (i) => i * (H + GAP);
  const mid = (height - H) / 2 - GAP / 2;
  const parts = [];
  g.dependencies.forEach((d, i) => {
    parts.push(`<line x1="${COLS[0] + W}" y1="${yOf(i) + H / 2}" x2="${COLS[1]}" y2="${mid + H / 2}" class="edge"/>`);
    parts.push(node(d, COLS[0], yOf(i)));
  });
  g.dependents.forEach((d, i) => {
    parts.push(`<line x1="${COLS[1] + W}" y1="${mid + H / 2}" x2="${COLS[2]}" y2="${yOf(i) + H / 2}" class="edge"/>`);
    parts.push(node(d, COLS[2], yOf(i)));
  });
  if (g.more.dependencies)
    parts.push(`<text x="${COLS[0] + 8}" y="${yOf(g.dependencies.length) + 20}" class="more">+ ${g.more.dependencies} more</text>`);
  if (g.more.dependents)
    parts.push(`<text x="${COLS[2] + 8}" y="${yOf(g.dependents.length) + 20}" class="more">+ ${g.more.dependents} more</text>`);
  parts.push(node({ id: g.id, type: g.type ?? 'this job', state: g.state }, COLS[1], mid, true));
  return `<svg id="job-graph" role="img" aria-label="dependency graph" width="${COLS[2] + W + 2}" height="${height}" viewBox="-1 -1 ${COLS[2] + W + 2} ${height + 2}">${parts.join('')}</svg>
    <p class="muted">Left: the jobs it runs after${g.dependencies.length ? '' : ' (none)'}. Right: the jobs that run after it${g.dependents.length ? '' : ' (none)'}.</p>`;
}
