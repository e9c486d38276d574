/** Real-time waiting for the tests whose subject is real time (long-polls, loops, processes). */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `condition` holds (checked every 5 ms, at most 5 s). */
export async function until(condition: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (condition()) return;
    await sleep(5);
  }
  throw new Error(`${what} did not hold within 5 s`);
}
