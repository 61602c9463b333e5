/**
 * Plain JSON Schema builders with the few TypeBox names the tools use.
 *
 * Why not TypeBox itself: Pi loads this package's compiled `.mjs` with plain
 * Node, so `import 'typebox'` would resolve the package's own second copy
 * (~210 ms of startup, and a peer-dependency warning from Pi 1.x), and every
 * CLI command and host would pay for it too. Both Pi lines validate tool
 * arguments against any JSON Schema (0.80: TypeBox `Compile` plus its own
 * coercion for non-TypeBox schemas; 1.x: pi-schema), so plain objects serve.
 *
 * A union of string literals becomes `{type: "string", enum: [...]}`: Pi's
 * docs warn that `anyOf` of literals breaks Google-family models.
 */

export type TSchema = { [key: string]: unknown }

type Options = { description?: string; minimum?: number; maximum?: number; [keyword: string]: unknown }

/** Schemas wrapped by `Optional`; `Object` leaves them out of `required`. */
const optional = new WeakSet<TSchema>()

const withOptions = (schema: TSchema, options?: Options): TSchema => ({ ...schema, ...options })

export const Type = {
  String: (options?: Options): TSchema => withOptions({ type: 'string' }, options),
  Integer: (options?: Options): TSchema => withOptions({ type: 'integer' }, options),
  Number: (options?: Options): TSchema => withOptions({ type: 'number' }, options),
  Boolean: (options?: Options): TSchema => withOptions({ type: 'boolean' }, options),
  Null: (options?: Options): TSchema => withOptions({ type: 'null' }, options),
  Literal: (value: string): TSchema => ({ const: value }),
  Array: (items: TSchema, options?: Options): TSchema => withOptions({ type: 'array', items }, options),

  Union(members: TSchema[], options?: Options): TSchema {
    const literals = members.map((m) => m.const)
    if (literals.every((v) => typeof v === 'string')) return withOptions({ type: 'string', enum: literals }, options)
    return withOptions({ anyOf: members }, options)
  },

  Optional(schema: TSchema): TSchema {
    const copy = { ...schema }
    optional.add(copy)
    return copy
  },

  Object(properties: Record<string, TSchema>, options?: Options): TSchema {
    const required = Object.keys(properties).filter((key) => !optional.has(properties[key]))
    return withOptions({ type: 'object', properties, ...(required.length ? { required } : {}) }, options)
  },
}
