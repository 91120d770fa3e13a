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
 *
 * A flood of STARTs can backlog a hundred thousand sequences behind a few thousand slots, so that nothing here is
 * done per backlogged sequence or per slot for each START: the backlog is a Set (insertion order is arrival
 * order, and a sequence leaves it without a search), and each instance counts its free slots.
 */
export class SequenceSlots<S extends SlotHolder<S>> {
  readonly byInstance = new Map<Instance, Slot<S>[]>();
  private readonly backlog = new Set<S>();
  private readonly free = new Map<Instance, number>();

  constructor(instances: readonly Instance[], perInstance: number) {
    for (const instance of instances) {
      this.byInstance.set(
        instance,
        Array.from({ length: perInstance }, (_, index) => ({ instance, index, owner: undefined })),
      );
      this.free.set(instance, perInstance);
    }
  }

  /** Sequences holding a slot or waiting for one. */
  get live(): number {
    let held = 0;
    for (const [instance, slots] of this.byInstance) held += slots.length - (this.free.get(instance) ?? 0);
    return held + this.backlog.size;
  }

  /** Every sequence holding a slot or waiting for one. */
  holders(): S[] {
    const all: S[] = [];
    for (const slots of this.byInstance.values()) for (const s of slots) if (s.owner) all.push(s.owner);
    return all.concat([...this.backlog]);
  }

  /** The sequences holding a slot of `instance`. */
  holdersOn(instance: Instance): S[] {
    return (this.byInstance.get(instance) ?? []).flatMap((s) => (s.owner ? [s.owner] : []));
  }

  /** Gives a new sequence a free slot, or a place in the backlog. */
  place(seq: S): void {
    const slot = this.freeSlot();
    if (slot) this.assign(seq, slot);
    else this.backlog.add(seq);
  }

  /** Takes a sequence out: its slot goes to the oldest backlogged sequence (while its instance is healthy). */
  vacate(seq: S): void {
    const slot = seq.slot;
    if (!slot) {
      this.backlog.delete(seq);
      return;
    }
    seq.slot = undefined;
    if (slot.owner !== seq) return;
    slot.owner = undefined;
    this.free.set(slot.instance, (this.free.get(slot.instance) ?? 0) + 1);
    if (slot.instance.healthy) {
      const next = this.nextBacklogged();
      if (next) this.assign(next, slot);
    }
  }

  /** Backlogged sequences take the free slots of healthy instances (one came back into service). */
  refill(): void {
    for (const [instance, slots] of this.byInstance) {
      if (!instance.healthy) continue;
      for (const slot of slots) {
        if (slot.owner) continue;
        const next = this.nextBacklogged();
        if (!next) return;
        this.assign(next, slot);
      }
    }
  }

  /** The oldest backlogged sequence, taken out of the backlog. */
  private nextBacklogged(): S | undefined {
    for (const seq of this.backlog) {
      this.backlog.delete(seq);
      return seq;
    }
    return undefined;
  }

  /** A free slot (the first), on the healthy instance with the most free slots. */
  private freeSlot(): Slot<S> | undefined {
    let best: Instance | undefined;
    let bestFree = 0;
    for (const [instance, free] of this.free) {
      if (instance.healthy && free > bestFree) {
        best = instance;
        bestFree = free;
      }
    }
    return best && this.byInstance.get(best)?.find((s) => !s.owner);
  }

  private assign(seq: S, slot: Slot<S>): void {
    slot.owner = seq;
    seq.slot = slot;
    this.free.set(slot.instance, (this.free.get(slot.instance) ?? 0) - 1);
  }
}
