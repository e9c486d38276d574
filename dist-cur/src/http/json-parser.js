import { InvalidInputError } from '../domain/errors.js';
export const MAX_JSON_DEPTH = 32;
/** Depth of the deepest array/object nesting, found by one scan of the text (strings skipped). */
export function jsonDepth(text) {
    let depth = 0;
    let max = 0;
    let inString = false;
    for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (inString) {
            if (c === 92 /* \ */)
                i++;
            else if (c === 34 /* " */)
                inString = false;
        }
        else if (c === 34)
            inString = true;
        else if (c === 123 /* { */ || c === 91 /* [ */) {
            if (++depth > max)
                max = depth;
        }
        else if (c === 125 || c === 93)
            depth--;
    }
    return max;
}
/**
 * The only body parser: JSON (application/json and application/*+json). Anything else is 415.
 * An empty body reads as "no body", so `curl -X POST -H 'content-type: application/json'` works
 * for routes that take none. Prototype-poisoning keys are refused.
 */
export function registerJsonParser(app) {
    app.removeAllContentTypeParsers();
    const parse = (_req, body, done) => {
        const text = typeof body === 'string' ? body : body.toString('utf8');
        if (text.trim() === '')
            return done(null, undefined);
        if (jsonDepth(text) > MAX_JSON_DEPTH) {
            return done(new InvalidInputError(`The JSON body is nested more than ${MAX_JSON_DEPTH} levels deep.`, [
                { path: '/', message: `nesting deeper than ${MAX_JSON_DEPTH} levels` },
            ]));
        }
        try {
            // a reviver sends JSON.parse down its slow path, so only bodies that mention the key pay for it
            const value = text.includes('__proto__')
                ? JSON.parse(text, (key, v) => {
                    if (key === '__proto__')
                        throw new SyntaxError('the key "__proto__" is not allowed');
                    return v;
                })
                : JSON.parse(text);
            done(null, value);
        }
        catch (err) {
            const e = Object.assign(new Error(`The body is not valid JSON: ${err.message}`), {
                statusCode: 400,
                code: 'FST_ERR_CTP_INVALID_JSON_BODY',
            });
            done(e);
        }
    };
    app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
    app.addContentTypeParser(/^application\/[a-z0-9.+-]*\+json$/i, { parseAs: 'string' }, parse);
}
//# sourceMappingURL=json-parser.js.map