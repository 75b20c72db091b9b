/**
 * A table's own entry for a key that came from a request or a file: `table[key]` would also find
 * `constructor`, `toString` or `__proto__` on Object.prototype, turning a hostile key into a
 * function where a reason or a rule was expected.
 */
export function own<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined
}
