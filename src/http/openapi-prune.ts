/**
 * The OpenAPI document lists the components its operations use, and no others. Every zod schema
 * with an id is registered twice by fastify-type-provider-zod (as written for requests, "…Input",
 * and as read in responses); a schema used only one way leaves the other unreferenced.
 */
type Json = unknown;

function refsIn(value: Json, into: Set<string>): void {
  if (Array.isArray(value)) {
    for (const v of value) refsIn(v, into);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) into.add(v.slice('#/components/schemas/'.length));
      else refsIn(v, into);
    }
  }
}

/** Drops the component schemas that no operation reaches, directly or through other components. */
export function pruneUnusedSchemas<D extends { paths?: Json; components?: { schemas?: Record<string, Json> } }>(doc: D): D {
  const schemas = doc.components?.schemas;
  if (!schemas) return doc;
  const used = new Set<string>();
  refsIn(doc.paths, used);
  for (let todo = [...used]; todo.length > 0;) {
    const found = new Set<string>();
    for (const name of todo) refsIn(schemas[name], found);
    todo = [...found].filter((n) => !used.has(n));
    for (const n of todo) used.add(n);
  }
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
  return { ...doc, components: { ...doc.components, schemas: kept } };
}
