function refsIn(value, into) {
    if (Array.isArray(value)) {
        for (const v of value)
            refsIn(v, into);
    }
    else if (value !== null && typeof value === 'object') {
        for (const [k, v] of Object.entries(value)) {
            if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/'))
                into.add(v.slice('#/components/schemas/'.length));
            else
                refsIn(v, into);
        }
    }
}
/** Drops the component schemas that no operation reaches, directly or through other components. */
export function pruneUnusedSchemas(doc) {
    const schemas = doc.components?.schemas;
    if (!schemas)
        return doc;
    const used = new Set();
    refsIn(doc.paths, used);
    for (let todo = [...used]; todo.length > 0;) {
        const found = new Set();
        for (const name of todo)
            refsIn(schemas[name], found);
        todo = [...found].filter((n) => !used.has(n));
        for (const n of todo)
            used.add(n);
    }
    const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
    return { ...doc, components: { ...doc.components, schemas: kept } };
}
//# sourceMappingURL=openapi-prune.js.map