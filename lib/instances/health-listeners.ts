import type { HealthEvent } from './instance';

/** The listeners of one instance's health events. A throwing listener does not stop the others. */
export class HealthListeners {
  private readonly listeners = new Set<(event: HealthEvent) => void>();

  /** Adds a listener; returns the function that removes it. */
  add(listener: (event: HealthEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: HealthEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own; the instance's state must not depend on it.
      }
    }
  }
}
