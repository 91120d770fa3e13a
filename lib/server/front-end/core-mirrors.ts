import type { ModelConfigJson } from '../../config/triton-model-config';
import { attachChatTemplate, type ChatMessage } from '../../model/chat-template';
import type { ModelLookup, ModelShape, ModelView } from '../../model/model-view';
import type { ModelMetadata } from '../../protocol/model-metadata';
import { SharedMemoryManager, type RegionStatus, type ShmTarget } from '../shared-memory';
import type { SyncCaller } from './sync-call';

/** Counters the core thread bumps and every front-end thread reads: [models changed, shared memory changed]. */
export const MODELS_CHANGED = 0;
export const REGIONS_CHANGED = 1;

/**
 * The models as this thread finds them: each model's shape is asked of the core thread once and kept until the
 * core says its models changed (a load, an unload, a new version); readiness, config and metadata are asked each
 * time, as they are read rarely and change on their own.
 */
export class RemoteModels implements ModelLookup {
  private readonly shapes = new Map<string, ModelShape>();
  private readonly views = new WeakMap<ModelShape, ModelView>();
  private seen = 0;

  constructor(
    private readonly sync: SyncCaller,
    private readonly changes: Int32Array,
  ) {}

  /** The shape of a model version (the latest when none is given), or MODEL_NOT_FOUND. */
  shapeOf(name: string, version: string | undefined): ModelShape {
    this.fresh();
    const key = version ? `${name}\0${version}` : name;
    let shape = this.shapes.get(key);
    if (shape === undefined) {
      shape = this.sync.call<ModelShape>('shape', name, version);
      this.shapes.set(key, shape);
    }
    return shape;
  }

  /** Forgets every shape once the core's models have changed. */
  private fresh(): void {
    const now = Atomics.load(this.changes, MODELS_CHANGED);
    if (now === this.seen) return;
    this.shapes.clear();
    this.seen = now;
  }

  /** The shape with what the endpoints read of the model asked of the core when read. */
  viewOf(shape: ModelShape): ModelView {
    let view = this.views.get(shape);
    if (view === undefined) {
      const { sync } = this;
      const { name, version } = shape;
      view = {
        ...shape,
        get ready() {
          return sync.call<boolean>('ready', name, version);
        },
        get configJson() {
          return sync.call<ModelConfigJson>('configJson', name, version);
        },
        get metadata() {
          return sync.call<ModelMetadata>('metadataOf', name, version);
        },
      };
      attachChatTemplate(view, (messages: readonly ChatMessage[]) => sync.call<string>('chatPrompt', name, version, messages));
      this.views.set(shape, view);
    }
    return view;
  }

  get(name: string, version?: string): ModelView {
    return this.viewOf(this.shapeOf(name, version));
  }

  has(name: string): boolean {
    return this.sync.call('has', name);
  }

  all(): readonly ModelView[] {
    this.fresh();
    return this.sync.call<ModelShape[]>('all').map((shape) => {
      const key = `${shape.name}\0${shape.version}`;
      const known = this.shapes.get(key) ?? shape;
      this.shapes.set(key, known);
      return this.viewOf(known);
    });
  }

  metadataOf(name: string, version?: string): ModelMetadata {
    return this.sync.call('metadataOf', name, version);
  }
}

/**
 * Shared-memory regions as this thread uses them: registered, unregistered and listed in the core thread (one
 * registry per server), read and written here through this thread's own descriptor of each region, opened the
 * first time a request names it and closed when the core's registrations change.
 */
export class FrontEndSharedMemory extends SharedMemoryManager {
  private readonly opened = new Set<string>();
  private seen = 0;

  constructor(
    allowed: boolean,
    private readonly sync: SyncCaller,
    private readonly changes: Int32Array,
  ) {
    super(allowed);
  }

  override register(name: string, key: string, offset: number, byteSize: number): void {
    this.sync.call('shmRegister', name, key, offset, byteSize);
  }

  override unregister(name?: string): void {
    this.sync.call('shmUnregister', name);
  }

  override status(name?: string): RegionStatus[] {
    return this.sync.call('shmStatus', name);
  }

  override read(target: ShmTarget, what: string): Buffer {
    this.open(target.region);
    return super.read(target, what);
  }

  override write(target: ShmTarget, data: Uint8Array, output: string): void {
    this.open(target.region);
    super.write(target, data, output);
  }

  override closeAll(): void {
    this.opened.clear();
    super.closeAll();
  }

  private open(name: string): void {
    const now = Atomics.load(this.changes, REGIONS_CHANGED);
    if (now !== this.seen) {
      this.closeAll();
      this.seen = now;
    }
    if (this.opened.has(name)) return;
    const [region] = this.status(name);
    if (region === undefined) return;
    super.register(region.name, region.key, region.offset, region.byte_size);
    this.opened.add(name);
  }
}
