import { TritonError } from '../../base/errors';
import { attachChatTemplate, compileChatTemplate, type CompiledChatTemplate } from '../../model/chat-template';
import type { ModelLookup, ModelView } from '../../model/model-view';
import { describedVersion, servingVersion } from '../../model/serving-version';
import type { ModelMetadata } from '../../protocol/model-metadata';
import { regionStatus, SharedMemoryManager, type RegionStatus, type RegisteredRegion, type ShmTarget } from '../shared-memory';
import type { CoreState, PublishedModel, PublishedState } from './core-state';

/** Asks the core thread to run one of its calls, without waiting for it (remote-core.ts). */
export type CoreCall = <T>(method: string, ...args: unknown[]) => Promise<T>;

/**
 * The models as this thread finds them: the core's published models, read here without asking the core. A state
 * the core publishes (a load, an unload, a model turning ready or not) replaces them all, before the core answers
 * whatever caused it.
 */
export class RemoteModels implements ModelLookup {
  /** The views of the state they were made for, every version of each name: built once per state, when first read. */
  private views = new Map<string, ModelView[]>();
  /** That state's failed loads, by name: known to the core, their versions unavailable. */
  private failed: ReadonlyMap<string, readonly string[]> = new Map();
  private viewsOf: CoreState | undefined;

  constructor(private readonly published: PublishedState) {}

  /** The model version that serves a request for a name and version, picked as the core picks it (ModelRepository.get). */
  get(name: string, version?: string): ModelView {
    const views = this.fresh();
    return servingVersion(name, version, views.get(name) ?? [], this.failed.get(name));
  }

  find(name: string, version?: string): ModelView {
    const views = this.fresh();
    return describedVersion(name, version, views.get(name) ?? [], this.failed.get(name));
  }

  has(name: string): boolean {
    return this.fresh().has(name);
  }

  all(): readonly ModelView[] {
    const state = this.published.current;
    const views = this.fresh();
    return state.models.map((m) => (views.get(m.shape.name) as ModelView[]).find((v) => v.version === m.shape.version) as ModelView);
  }

  metadataOf(name: string, version?: string): ModelMetadata {
    return this.get(name, version).metadata;
  }

  /** The views of the current state, by name (and its failed loads, in `failed`). */
  private fresh(): Map<string, ModelView[]> {
    const state = this.published.current;
    if (state === this.viewsOf) return this.views;
    const views = new Map<string, ModelView[]>();
    for (const m of state.models) {
      const versions = views.get(m.shape.name);
      if (versions === undefined) views.set(m.shape.name, [viewOf(m)]);
      else versions.push(viewOf(m));
    }
    this.views = views;
    this.failed = new Map(state.failedLoads.map((f) => [f.name, f.versions]));
    this.viewsOf = state;
    return views;
  }
}

/**
 * The chat template of a model bound with a function as its template: it has no text, so `RemoteCore.chatPrompt`
 * asks the core to apply it; it is never called here.
 */
const APPLIED_IN_CORE: CompiledChatTemplate = () => {
  throw new TritonError('INTERNAL', 'a chat template that is a function is applied in the core thread');
};

/** A published model as the transports read a model. */
function viewOf(m: PublishedModel): ModelView {
  const view: ModelView = { ...m.shape, state: m.state, ready: m.ready, configJson: m.configJson, metadata: m.metadata };
  return attachChatTemplate(view, m.chatTemplate === undefined ? APPLIED_IN_CORE : compileChatTemplate(m.chatTemplate, m.shape.name));
}

/**
 * Shared-memory regions as this thread uses them: registered and unregistered in the core thread (one registry
 * per server), listed from what the core publishes, and read and written here through this thread's own
 * descriptor of each region, opened the first time a request names it and closed when the core's registrations
 * change.
 */
export class FrontEndSharedMemory extends SharedMemoryManager {
  private readonly opened = new Set<string>();
  private seen: readonly RegisteredRegion[] | undefined;

  constructor(
    allowed: boolean,
    private readonly published: PublishedState,
    private readonly call: CoreCall,
  ) {
    super(allowed);
  }

  override register(name: string, key: string, offset: number, byteSize: number): Promise<void> {
    return this.call('shmRegister', name, key, offset, byteSize);
  }

  override unregister(name?: string): Promise<void> {
    return this.call('shmUnregister', name);
  }

  override status(name?: string): RegionStatus[] {
    const regions = this.coreRegions();
    if (name === undefined) return regions.map(regionStatus);
    const region = regions.find((r) => r.name === name);
    // Not opened here either (coreRegions() closed what the core no longer has): NOT_FOUND, in the manager's words.
    return region === undefined ? super.status(name) : [regionStatus(region)];
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

  /**
   * The regions the core has registered; what this thread opened is closed once they change, a region registered
   * again among them (its registration's count tells it apart even under the same name, key and window: the
   * object may have been made again, and the descriptor this thread holds be the old one's).
   */
  private coreRegions(): readonly RegisteredRegion[] {
    const regions = this.published.current.regions;
    if (regions !== this.seen) {
      // Every state the core publishes brings its regions: only a change of them closes this thread's.
      if (this.seen === undefined || JSON.stringify(regions) !== JSON.stringify(this.seen)) this.closeAll();
      this.seen = regions;
    }
    return regions;
  }

  private open(name: string): void {
    const regions = this.coreRegions();
    if (this.opened.has(name)) return;
    const region = regions.find((r) => r.name === name);
    if (region === undefined) return;
    super.register(region.name, region.key, region.offset, region.byte_size);
    this.opened.add(name);
  }
}
