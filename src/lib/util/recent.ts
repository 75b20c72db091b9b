/**
 * The values of the keys used lately, at most `keep` of them: the least recently used goes first
 * (a Map keeps insertion order, so moving a key to the end on each use is the whole bookkeeping).
 */
export class RecentCache<K, V> {
  private readonly entries = new Map<K, V>()

  constructor(private readonly keep: number) {}

  /** The value for key, made by `make` on a miss. */
  get(key: K, make: () => V): V {
    let v = this.entries.get(key)
    if (v !== undefined) this.entries.delete(key)
    else {
      v = make()
      if (this.entries.size >= this.keep) this.entries.delete(this.entries.keys().next().value!)
    }
    this.entries.set(key, v)
    return v
  }
}
