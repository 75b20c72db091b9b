/**
 * The one error the JSON Schema compiler throws: the schema asks for something the grammar cannot
 * honour exactly. Refusing is the alternative to weakening (a grammar that accepts invalid
 * documents), so every refusal names the keyword and where it sits, for the caller to report.
 */
export class SchemaRefusal extends Error {
  constructor(
    readonly keyword: string,
    readonly pointer: string,
    why: string,
  ) {
    super(`${keyword} at ${pointer || '/'}: ${why}`)
    this.name = 'SchemaRefusal'
  }
}

/** Append a key to a JSON pointer (RFC 6901 escaping). */
export function childPointer(pointer: string, ...keys: (string | number)[]): string {
  return pointer + keys.map((k) => '/' + String(k).replace(/~/g, '~0').replace(/\//g, '~1')).join('')
}
