import { sleep } from './wait.js';

/**
 * The most jobs that ran at one instant, from their own startedAt..finishedAt: an interval that
 * ends when another starts does not overlap it (a slot passed on at one instant).
 */
export function peakOverlap(jobs: readonly { startedAt: Date | string | null; finishedAt: Date | string | null }[]): number {
  const at = (t: Date | string) => (typeof t === 'string' ? Date.parse(t) : t.getTime());
  const edges: [number, number][] = [];
  for (const j of jobs) {
    if (j.startedAt === null || j.finishedAt === null) continue;
    edges.push([at(j.startedAt), 1], [at(j.finishedAt), -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let peak = 0;
  for (const [, step] of edges) peak = Math.max(peak, (running += step));
  return peak;
}

/** peakOverlap of the jobs a WHERE clause picks, read from the job table. */
export async function peakOverlapIn(pool: { query<R>(text: string): Promise<{ rows: R[] }> }, where: string): Promise<number> {
  const { rows } = await pool.query<{ startedAt: Date | null; finishedAt: Date | null }>(
    `SELECT started_at AS "startedAt", finished_at AS "finishedAt" FROM job WHERE ${where}`,
  );
  return peakOverlap(rows);
}

/** Reads `read()` every `everyMs` until stop(), which resolves with the largest value read. */
export function sampleMax(read: () => Promise<number>, everyMs = 5): { stop(): Promise<number> } {
  let sampling = true;
  let max = 0;
  const loop = (async () => {
    while (sampling) {
      max = Math.max(max, await read());
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      sampling = false;
      await loop;
      return max;
    },
  };
}
