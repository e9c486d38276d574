import { createHash } from 'node:crypto';
import { compileOnly } from '../../db/executor.js';
/** Stands for a per-call value in a statement compiled once (see `compiledOnce`). */
class Slot {
    key;
    constructor(key) {
        this.key = key;
    }
    toString() {
        throw new Error(`statement value "${this.key}" was used as text while the statement was built`);
    }
    toJSON() {
        return this.toString();
    }
}
const compiledStatements = new Map();
/**
 * Runs one of the statements that serve the worker protocol (lease, report, heartbeat, insert,
 * get) as a named prepared statement: node-postgres prepares it once per connection, and on
 * `db.protocol`, whose connections use generic plans (see Db), PostgreSQL plans it once too. The
 * Kysely template is built and compiled once per `shape` (a key that names every choice `build`
 * makes), with slots where the per-call `values` go; later calls only fill in the slots. Building
 * and compiling the ~30-column report template took more CPU than the rest of a report request's
 * JavaScript. `build` may use its argument only as SQL values: anything that depends on a value
 * belongs in `shape`. Named after a hash of the text.
 */
export async function compiledOnce(db, shape, values, build) {
    let st = compiledStatements.get(shape);
    if (st === undefined) {
        const slots = new Proxy({}, { get: (_target, key) => new Slot(String(key)) });
        const compiled = build(slots).compile(compileOnly);
        const name = `jc_${createHash('sha1').update(compiled.sql).digest('base64url').slice(0, 24)}`;
        st = { name, text: compiled.sql, params: compiled.parameters };
        compiledStatements.set(shape, st);
    }
    const params = st.params.map((p) => (p instanceof Slot ? values[p.key] : p));
    return db.prepared({ name: st.name, text: st.text, values: params });
}
//# sourceMappingURL=compile.js.map