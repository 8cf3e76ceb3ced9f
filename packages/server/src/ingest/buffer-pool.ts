/**
 * A few large buffers kept for the next delivery (issue 30): a flow delivery's body and its COPY
 * tuples are a few megabytes each, and taken afresh for every delivery they were most of what the
 * web process spent in GC. A buffer is given back only once nothing reads it any more.
 */
export class BufferPool {
  readonly #kept: Buffer[] = [];

  constructor(
    /** How many buffers are kept at most. */
    private readonly most = 4,
    /** A buffer larger than this (a delivery far above the usual) is not kept. */
    private readonly largest = 8 * 2 ** 20,
  ) {}

  /** A buffer of at least `size` bytes: the smallest kept one that fits, or a new one. */
  take(size: number): Buffer {
    const kept = this.#kept;
    let best = -1;
    for (let k = 0; k < kept.length; k++) if (kept[k]!.length >= size && (best < 0 || kept[k]!.length < kept[best]!.length)) best = k;
    return best >= 0 ? kept.splice(best, 1)[0]! : Buffer.allocUnsafe(size);
  }

  /** Keeps `buffer` for a later take, if there is room and it is not too large. */
  give(buffer: Buffer): void {
    const kept = this.#kept;
    if (kept.length < this.most && buffer.length <= this.largest && !kept.includes(buffer)) kept.push(buffer);
  }

  /** How many buffers are kept now. */
  get size(): number {
    return this.#kept.length;
  }
}
