/**
 * (b) push types: jobclock leases the queue's jobs itself and POSTs each to a local receiver that
 * answers 200 at once, in a process of its own; no worker runs. Against the README loop (b.loop) on
 * the same queue in the same round.
 */
import { spawn } from 'node:child_process';
import { sleep, warmThenTime } from '../lib/context.js';
import { HttpClient, unexpected } from '../lib/http.js';
import { tokenOf } from '../lib/tokens.js';
import { checkedRate, processingTimeboxMs, warmupJobs } from './worker-protocol.js';
/** The receiver's program: answers 200 with an empty body at once, prints its port. */
const RECEIVER = `
const http = require('node:http');
const server = http.createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(200).end()); });
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;
async function startReceiver() {
    const child = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await new Promise((resolve, reject) => {
        child.once('error', reject);
        child.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    });
    return {
        url: `http://127.0.0.1:${port}/push`,
        close: () => new Promise((resolve) => {
            child.once('exit', () => resolve());
            child.kill();
        }),
    };
}
const FINISHED = `select count(*)::int as n from job where state = 'finished' and type = 'noop'`;
/** b.push: jobs/s of a push type (PATCH /types/noop {push}) to a receiver that answers 200 at once. */
export const jobclockPush = {
    key: 'b.push',
    guardMs: (ctx) => processingTimeboxMs(ctx) + 60_000,
    async run(ctx) {
        const n = ctx.templates.jobs;
        const db = await ctx.server.createDatabase(await ctx.templates.jobclockJobs(1, n));
        let receiver = null;
        let admin = null;
        try {
            await db.written();
            const base = await ctx.host.open({ url: db.url, schedulerLoop: true });
            await db.settle();
            receiver = await startReceiver();
            admin = new HttpClient(base, tokenOf('admin'), 1);
            const client = admin;
            const setPush = async (push) => {
                const res = await client.request('PATCH', '/types/noop', { push });
                if (res.status !== 200)
                    throw unexpected('PATCH /types/noop', res);
            };
            const url = receiver.url;
            let before = 0;
            const t = await warmThenTime(ctx, processingTimeboxMs(ctx), async (until) => {
                const start = before;
                await setPush({ url });
                let now = start;
                // the engine hears of the push type through a notification; the count is polled
                while (performance.now() < until.deadline && now - start < until.jobs && now < n) {
                    await sleep(20);
                    now = (await db.exec(FINISHED)).rows[0].n;
                }
                const endedAt = performance.now();
                await setPush(null);
                // requests in flight when push went off still finish: they count in this phase
                await sleep(200);
                now = (await db.exec(FINISHED)).rows[0].n;
                before = now;
                return { done: now - start, endedAt };
            }, warmupJobs(ctx));
            return await checkedRate(db, t, n, FINISHED, null, null);
        }
        finally {
            admin?.close();
            await ctx.host.close().catch(() => undefined);
            await receiver?.close();
            await db.retire();
        }
    },
};
//# sourceMappingURL=push.js.map