import type { Instance } from '../instances/instance';

/** A batch slot of one instance; a live sequence owns it from its START to its END (or idle timeout). */
export interface Slot<S> {
  readonly instance: Instance;
  readonly index: number;
  owner: S | undefined;
}

/** What the slots need of a sequence: the slot it holds, if any. */
export interface SlotHolder<S> {
  slot: Slot<S> | undefined;
}

/**
 * The batch slots of a sequence batcher's instances, and the sequences waiting for one (the backlog, oldest
 * first). A new sequence takes a free slot on the healthy instance with the most free slots; a freed slot goes to
 * the oldest backlogged sequence.
 */
export class SequenceSlots<S extends SlotHolder<S>> {
  readonly byInstance = new Map<Instance, Slot<S>[]>();
  private readonly backlog: S[] = [];

  constructor(instances: readonly Instance[], perInstance: number) {
    for (const instance of instances) {
      this.byInstance.set(
        instance,
        Array.from({ length: perInstance }, (_, index) => ({ instance, index, owner: undefined })),
      );
    }
  }

  /** Sequences holding a slot or waiting for one. */
  get live(): number {
    let n = 0;
    for (const slots of this.byInstance.values()) for (const s of slots) if (s.owner) n++;
    return n + this.backlog.length;
  }

  /** Every sequence holding a slot or waiting for one. */
  holders(): S[] {
    const all: S[] = [];
    for (const slots of this.byInstance.values()) for (const s of slots) if (s.owner) all.push(s.owner);
    return all.concat(this.backlog);
  }

  /** The sequences holding a slot of `instance`. */
  holdersOn(instance: Instance): S[] {
    return (this.byInstance.get(instance) ?? []).flatMap((s) => (s.owner ? [s.owner] : []));
  }

  /** Gives a new sequence a free slot, or a place in the backlog. */
  place(seq: S): void {
    const slot = this.freeSlot();
    if (slot) this.assign(seq, slot);
    else this.backlog.push(seq);
  }

  /** Takes a sequence out: its slot goes to the oldest backlogged sequence (while its instance is healthy). */
  vacate(seq: S): void {
    const backlogged = this.backlog.indexOf(seq);
    if (backlogged >= 0) this.backlog.splice(backlogged, 1);
    const slot = seq.slot;
    seq.slot = undefined;
    if (!slot || slot.owner !== seq) return;
    slot.owner = undefined;
    if (slot.instance.healthy) {
      const next = this.backlog.shift();
      if (next) this.assign(next, slot);
    }
  }

  /** Backlogged sequences take the free slots of healthy instances (one came back into service). */
  refill(): void {
    for (const [instance, slots] of this.byInstance) {
      if (!instance.healthy) continue;
      for (const slot of slots) {
        if (slot.owner) continue;
        const next = this.backlog.shift();
        if (!next) return;
        this.assign(next, slot);
      }
    }
  }

  /** A free slot, on the healthy instance with the most free slots. */
  private freeSlot(): Slot<S> | undefined {
    let best: Slot<S> | undefined;
    let bestFree = 0;
    for (const [instance, slots] of this.byInstance) {
      if (!instance.healthy) continue;
      const free = slots.filter((s) => !s.owner);
      if (free.length > bestFree) {
        best = free[0];
        bestFree = free.length;
      }
    }
    return best;
  }

  private assign(seq: S, slot: Slot<S>): void {
    slot.owner = seq;
    seq.slot = slot;
  }
}
