async function rows(db, text, values = []) {
    return (await db.query(text, values)).rows;
}
/** Objects that belong to an extension (pg_trgm's functions and operators) are the extension's. */
const NOT_FROM_EXTENSION = (oidExpr, catalog) => `not exists (select 1 from pg_depend d where d.classid = '${catalog}'::regclass and d.objid = ${oidExpr} and d.deptype = 'e')`;
const qi = (name) => (/^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`);
/** Renders the schema `schema` (default: the first on the search path) of the database `db` reads. */
export async function dumpSchema(db, schema) {
    const ns = schema ?? (await rows(db, 'select current_schema() as s'))[0].s;
    const out = [
        '-- The schema of a freshly migrated jobclock database, generated from its catalogue by',
        '-- `npm run schema` (src/cli/schema.ts). Do not edit: change a migration and regenerate.',
        '-- CI fails when this file differs from what the migrations make.',
    ];
    const section = (title) => out.push('', `-- ${title}`, '');
    const extensions = await rows(db, `select extname from pg_extension where extname <> 'plpgsql' order by extname`);
    if (extensions.length > 0) {
        section('Extensions');
        for (const e of extensions)
            out.push(`CREATE EXTENSION IF NOT EXISTS ${qi(e.extname)};`);
    }
    const types = await rows(db, `select t.typname as name, t.typtype as kind,
            (select array_agg(e.enumlabel::text order by e.enumsortorder) from pg_enum e where e.enumtypid = t.oid) as labels,
            case when t.typtype = 'd' then format_type(t.typbasetype, t.typtypmod) end as base
       from pg_type t join pg_namespace n on n.oid = t.typnamespace
      where n.nspname = $1 and t.typtype in ('e', 'd') and ${NOT_FROM_EXTENSION('t.oid', 'pg_type')}
      order by t.typname`, [ns]);
    if (types.length > 0) {
        section('Types');
        for (const t of types) {
            out.push(t.kind === 'e'
                ? `CREATE TYPE ${qi(t.name)} AS ENUM (${(t.labels ?? []).map((l) => `'${l.replace(/'/g, "''")}'`).join(', ')});`
                : `CREATE DOMAIN ${qi(t.name)} AS ${t.base};`);
        }
    }
    const sequences = await rows(db, `select c.relname as name, format_type(s.seqtypid, null) as type, s.seqstart::text as start, s.seqincrement::text as inc,
            s.seqmin::text as min, s.seqmax::text as max, s.seqcache::text as cache, s.seqcycle as cycle
       from pg_sequence s join pg_class c on c.oid = s.seqrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1
        and not exists (select 1 from pg_depend d where d.objid = c.oid and d.classid = 'pg_class'::regclass and d.deptype = 'i')
      order by c.relname`, [ns]);
    if (sequences.length > 0) {
        section('Sequences (identity columns have theirs implicitly)');
        for (const s of sequences) {
            out.push(`CREATE SEQUENCE ${qi(s.name)} AS ${s.type} START ${s.start} INCREMENT ${s.inc} MINVALUE ${s.min} MAXVALUE ${s.max} CACHE ${s.cache}${s.cycle ? ' CYCLE' : ''};`);
        }
    }
    const functions = await rows(db, `select p.proname as name, pg_get_function_identity_arguments(p.oid) as args, pg_get_functiondef(p.oid) as def,
            p.proacl::text[] as acl, pg_get_userbyid(p.proowner) as owner
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = $1 and p.prokind in ('f', 'p') and ${NOT_FROM_EXTENSION('p.oid', 'pg_proc')}
      order by p.proname, pg_get_function_identity_arguments(p.oid)`, [ns]);
    if (functions.length > 0) {
        section('Functions');
        for (const f of functions) {
            out.push(`${f.def.trimEnd()};`);
            const privileges = functionPrivileges(f.acl, f.owner, `FUNCTION ${qi(ns)}.${qi(f.name)}(${f.args})`);
            out.push(...privileges, '');
        }
        out.pop();
    }
    const tables = await rows(db, `select c.oid, c.relname as name, c.relkind as kind,
            case when c.relkind = 'p' then pg_get_partkeydef(c.oid) end as partkey,
            (select pc.relname from pg_inherits i join pg_class pc on pc.oid = i.inhparent where i.inhrelid = c.oid and c.relispartition) as parent,
            case when c.relispartition then pg_get_expr(c.relpartbound, c.oid) end as bound,
            (select array_agg(o order by o) from unnest(c.reloptions) o) as options
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and c.relkind in ('r', 'p') and ${NOT_FROM_EXTENSION('c.oid', 'pg_class')}
      order by c.relispartition, c.relname`, [ns]);
    section('Tables');
    for (const t of tables) {
        const withOptions = t.options && t.options.length > 0 ? ` WITH (${t.options.join(', ')})` : '';
        if (t.parent !== null) {
            out.push(`CREATE TABLE ${qi(t.name)} PARTITION OF ${qi(t.parent)} ${t.bound}${withOptions};`, '');
            continue;
        }
        const columns = await rows(db, `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as notnull,
              pg_get_expr(d.adbin, d.adrelid) as def, a.attidentity as identity, a.attgenerated as generated,
              case when a.attcollation <> t.typcollation then (select collname from pg_collation where oid = a.attcollation) end as collation
         from pg_attribute a join pg_type t on t.oid = a.atttypid
         left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
        where a.attrelid = $1 and a.attnum > 0 and not a.attisdropped
        order by a.attnum`, [t.oid]);
        const lines = columns.map((c) => {
            let line = `  ${qi(c.name)} ${c.type}`;
            if (c.collation)
                line += ` COLLATE ${qi(c.collation)}`;
            if (c.identity === 'a')
                line += ' GENERATED ALWAYS AS IDENTITY';
            else if (c.identity === 'd')
                line += ' GENERATED BY DEFAULT AS IDENTITY';
            else if (c.generated === 's')
                line += ` GENERATED ALWAYS AS (${c.def}) STORED`;
            else if (c.generated === 'v')
                line += ` GENERATED ALWAYS AS (${c.def}) VIRTUAL`;
            else if (c.def !== null)
                line += ` DEFAULT ${c.def}`;
            if (c.notnull)
                line += ' NOT NULL';
            return line;
        });
        const partition = t.partkey ? ` PARTITION BY ${t.partkey}` : '';
        out.push(`CREATE TABLE ${qi(t.name)} (`, lines.join(',\n'), `)${partition}${withOptions};`, '');
    }
    out.pop();
    // constraints other than NOT NULL (PostgreSQL 18 keeps those in pg_constraint too; they are in
    // the column lines), declared on the table itself (a partition's inherited ones come with it)
    const constraints = await rows(db, `select c.relname as tbl, k.conname as name, pg_get_constraintdef(k.oid) as def
       from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and k.contype <> 'n' and k.conislocal and ${NOT_FROM_EXTENSION('c.oid', 'pg_class')}
      order by c.relname, case k.contype when 'p' then 0 when 'u' then 1 when 'c' then 2 when 'x' then 3 else 4 end, k.conname`, [ns]);
    if (constraints.length > 0) {
        section('Constraints');
        for (const k of constraints)
            out.push(`ALTER TABLE ONLY ${qi(k.tbl)} ADD CONSTRAINT ${qi(k.name)} ${k.def};`);
    }
    // indexes that no constraint makes, and not a partition's copy of its parent's index
    const indexes = await rows(db, `select pg_get_indexdef(i.indexrelid) as def
       from pg_index i join pg_class ic on ic.oid = i.indexrelid join pg_class c on c.oid = i.indrelid
       join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and ${NOT_FROM_EXTENSION('c.oid', 'pg_class')}
        and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid and k.conrelid = i.indrelid)
        and not exists (select 1 from pg_inherits h where h.inhrelid = i.indexrelid)
      order by c.relname, ic.relname`, [ns]);
    if (indexes.length > 0) {
        section('Indexes');
        for (const i of indexes)
            out.push(`${i.def};`);
    }
    const views = await rows(db, `select c.relname as name, c.relkind as kind, pg_get_viewdef(c.oid, true) as def
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and c.relkind in ('v', 'm') and ${NOT_FROM_EXTENSION('c.oid', 'pg_class')}
      order by c.relname`, [ns]);
    if (views.length > 0) {
        section('Views');
        for (const v of views) {
            out.push(`CREATE ${v.kind === 'm' ? 'MATERIALIZED VIEW' : 'VIEW'} ${qi(v.name)} AS`, `${v.def.trimEnd().replace(/;$/, '')};`, '');
        }
        out.pop();
    }
    // a trigger of a partitioned table is cloned onto each partition: the clones are left out
    const triggers = await rows(db, `select pg_get_triggerdef(g.oid) as def
       from pg_trigger g join pg_class c on c.oid = g.tgrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and not g.tgisinternal and g.tgparentid = 0
      order by c.relname, g.tgname`, [ns]);
    if (triggers.length > 0) {
        section('Triggers');
        for (const g of triggers)
            out.push(`${g.def};`);
    }
    const comments = await rows(db, `select case when d.objsubid = 0 then 'TABLE ' || quote_ident(c.relname)
                 else 'COLUMN ' || quote_ident(c.relname) || '.' || quote_ident(a.attname) end as target,
            d.description as text
       from pg_description d join pg_class c on d.classoid = 'pg_class'::regclass and c.oid = d.objoid
       join pg_namespace n on n.oid = c.relnamespace
       left join pg_attribute a on a.attrelid = c.oid and a.attnum = d.objsubid
      where n.nspname = $1 and c.relkind in ('r', 'p') and ${NOT_FROM_EXTENSION('c.oid', 'pg_class')}
      order by c.relname, d.objsubid`, [ns]);
    if (comments.length > 0) {
        section('Comments');
        for (const c of comments)
            out.push(`COMMENT ON ${c.target} IS '${c.text.replace(/'/g, "''")}';`);
    }
    return `${out.join('\n')}\n`;
}
/**
 * A function's privileges as statements, leaving out the owner (who differs between servers):
 * REVOKE from PUBLIC when PUBLIC may not execute it, GRANT to every other role that may.
 */
function functionPrivileges(acl, owner, target) {
    if (acl === null)
        return []; // the default: PUBLIC may execute
    const out = [];
    const grantees = acl.map((item) => item.slice(0, item.indexOf('=')));
    if (!grantees.includes(''))
        out.push(`REVOKE ALL ON ${target} FROM PUBLIC;`);
    for (const g of grantees.filter((g) => g !== '' && g !== owner).sort())
        out.push(`GRANT EXECUTE ON ${target} TO ${g};`);
    return out;
}
//# sourceMappingURL=schema-dump.js.map