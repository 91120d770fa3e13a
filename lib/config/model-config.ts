import {
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from './class-validator';
import { TritonError } from '../base/errors';
import { DATA_TYPES, type DataType } from '../tensor/dtype';
import { assignKnown } from './validate';
import { SequenceBatching, type SequenceBatchingInit } from './sequence-batching';
import { toBatchInputs, toBatchOutputs, type BatchInputInit, type BatchOutputInit } from './ragged-batching';

/** What happens to a request that times out in the queue. */
export type TimeoutAction = 'REJECT' | 'DELAY';

/** Plain-object form of QueuePolicy. */
export interface QueuePolicyInit {
  timeoutAction?: TimeoutAction;
  defaultTimeoutMicroseconds?: number;
  allowTimeoutOverride?: boolean;
  maxQueueSize?: number;
}

const QUEUE_POLICY_KEYS = ['timeoutAction', 'defaultTimeoutMicroseconds', 'allowTimeoutOverride', 'maxQueueSize'] as const;

/** Queue policy of one priority level, as Triton's `ModelQueuePolicy`. */
export class QueuePolicy {
  /** REJECT fails a timed-out request; DELAY lets it run after the requests that have not timed out. */
  @IsIn(['REJECT', 'DELAY'], { message: 'timeoutAction must be one of REJECT, DELAY' })
  timeoutAction: TimeoutAction = 'REJECT';

  /** Queue timeout in µs; 0 means none. */
  @IsInt()
  @Min(0)
  defaultTimeoutMicroseconds = 0;

  /** Whether a request's `timeout` parameter may override the default timeout. */
  @IsBoolean()
  allowTimeoutOverride = false;

  /** Most requests waiting at this level; 0 means unbounded. Excess requests get UNAVAILABLE. */
  @IsInt()
  @Min(0)
  maxQueueSize = 0;

  constructor(init?: QueuePolicyInit) {
    assignKnown(this, init, QUEUE_POLICY_KEYS, 'QueuePolicy');
  }
}

/** Plain-object form of DynamicBatcher. */
export interface DynamicBatcherInit {
  maxQueueDelayMicroseconds?: number;
  preferredBatchSize?: number[];
  preserveOrdering?: boolean;
  priorityLevels?: number;
  defaultPriorityLevel?: number;
  defaultQueuePolicy?: QueuePolicy | QueuePolicyInit;
  priorityQueuePolicy?: Record<number, QueuePolicy | QueuePolicyInit>;
}

const BATCHER_KEYS = [
  'maxQueueDelayMicroseconds',
  'preferredBatchSize',
  'preserveOrdering',
  'priorityLevels',
  'defaultPriorityLevel',
  'defaultQueuePolicy',
  'priorityQueuePolicy',
] as const;

/** Dynamic batcher settings, as Triton's `dynamic_batching` and PyTriton's `DynamicBatcher`. */
export class DynamicBatcher {
  /** How long a batch may wait for more requests once an instance is free; 0 cuts at once. */
  @IsInt()
  @Min(0)
  maxQueueDelayMicroseconds = 0;

  /** Batch sizes to aim for; empty means the largest batch available. */
  @IsArray()
  @IsInt({ each: true })
  @Min(1, { each: true })
  preferredBatchSize: number[] = [];

  /** Answer requests in arrival order. */
  @IsBoolean()
  preserveOrdering = false;

  /** Number of priority levels; 0 disables priorities. Level 1 is the highest. */
  @IsInt()
  @Min(0)
  priorityLevels = 0;

  /** Level of requests that name none; must be in [1, priorityLevels] when priorities are on. */
  @IsInt()
  @Min(0)
  defaultPriorityLevel = 0;

  @ValidateNested()
  defaultQueuePolicy: QueuePolicy = new QueuePolicy();

  @IsObject()
  priorityQueuePolicy: Record<number, QueuePolicy> = {};

  constructor(init?: DynamicBatcherInit) {
    assignKnown(this, init, BATCHER_KEYS, 'DynamicBatcher');
    this.defaultQueuePolicy = toQueuePolicy(this.defaultQueuePolicy);
    const byLevel: Record<number, QueuePolicy> = {};
    for (const [level, policy] of Object.entries(this.priorityQueuePolicy ?? {})) byLevel[Number(level)] = toQueuePolicy(policy);
    this.priorityQueuePolicy = byLevel;
  }
}

function toQueuePolicy(p: QueuePolicy | QueuePolicyInit | undefined): QueuePolicy {
  return p instanceof QueuePolicy ? p : new QueuePolicy(p);
}

/** Plain-object form of one warmup input. */
export interface WarmupInputInit {
  dtype: DataType;
  dims: number[];
  /** `zero` fills with zeros (empty strings for BYTES), `random` with random values. */
  data?: 'zero' | 'random';
}

/** Plain-object form of WarmupSetting. */
export interface WarmupSettingInit {
  name: string;
  batchSize?: number;
  inputs: Record<string, WarmupInputInit>;
  count?: number;
}

const WARMUP_KEYS = ['name', 'batchSize', 'inputs', 'count'] as const;

/** One warmup run, as Triton's `model_warmup` entry: executed before the model turns ready. */
export class WarmupSetting {
  @IsString()
  name!: string;

  @IsInt()
  @Min(1)
  batchSize = 1;

  @IsObject()
  inputs: Record<string, WarmupInputInit> = {};

  @IsInt()
  @Min(1)
  count = 1;

  constructor(init: WarmupSettingInit) {
    assignKnown(this, init, WARMUP_KEYS, 'WarmupSetting');
    for (const [name, input] of Object.entries(this.inputs ?? {})) {
      if (!DATA_TYPES.includes(input?.dtype)) {
        throw new TritonError('INVALID_CONFIG', `invalid WarmupSetting: inputs.${name}.dtype must be one of ${DATA_TYPES.join(', ')}`);
      }
    }
  }
}

/** Plain-object form of ModelConfig. */
export interface ModelConfigInit {
  batching?: boolean;
  maxBatchSize?: number;
  batcher?: DynamicBatcher | DynamicBatcherInit | null;
  decoupled?: boolean;
  responseCache?: boolean;
  warmup?: (WarmupSetting | WarmupSettingInit)[];
  parameters?: Record<string, string>;
  sequenceBatching?: SequenceBatching | SequenceBatchingInit | null;
  batchInput?: readonly BatchInputInit[];
  batchOutput?: readonly BatchOutputInit[];
}

const MODEL_CONFIG_KEYS = ['batching', 'maxBatchSize', 'batcher', 'decoupled', 'responseCache', 'warmup', 'parameters', 'sequenceBatching', 'batchInput', 'batchOutput'] as const;

/** How a bound model batches and behaves, as PyTriton's `ModelConfig`. */
export class ModelConfig {
  /** Whether the model takes a batch dim; false means `max_batch_size: 0`. */
  @IsBoolean()
  batching = true;

  /** Largest batch one execution takes (when batching; not read, nor checked, when `batching` is false). */
  @ValidateIf((c: ModelConfig) => c.batching !== false)
  @IsInt()
  @Min(1, { message: "maxBatchSize must not be less than 1; for a model without a batch dimension (Triton's max_batch_size: 0) set batching: false" })
  @Max(2 ** 31 - 1)
  maxBatchSize = 4;

  /** Dynamic batcher; null runs each request on its own (Triton's default scheduler). */
  @IsOptional()
  @ValidateNested()
  batcher: DynamicBatcher | null = new DynamicBatcher();

  /** Each request may receive zero or more responses (streaming). */
  @IsBoolean()
  decoupled = false;

  /** Cache responses by request content. */
  @IsBoolean()
  responseCache = false;

  @IsArray()
  @ValidateNested({ each: true })
  warmup: WarmupSetting[] = [];

  /** Free-form parameters, reported in the model config. */
  @IsObject()
  parameters: Record<string, string> = {};

  /**
   * Sequence (stateful) batcher, as Triton's `sequence_batching` (see docs/sequence.md); it takes the place of
   * the dynamic batcher. Null or absent: none.
   */
  @IsOptional()
  sequenceBatching: SequenceBatching | null = null;

  /** Inputs the batcher computes from each batch for ragged inputs, as Triton's `batch_input` (docs/ragged.md). */
  @IsArray()
  batchInput: BatchInputInit[] = [];

  /** Outputs scattered back to the requests by a ragged input's shapes, as Triton's `batch_output`. */
  @IsArray()
  batchOutput: BatchOutputInit[] = [];

  constructor(init?: ModelConfigInit) {
    assignKnown(this, init, MODEL_CONFIG_KEYS, 'ModelConfig');
    if (this.sequenceBatching !== null && !(this.sequenceBatching instanceof SequenceBatching)) this.sequenceBatching = new SequenceBatching(this.sequenceBatching);
    this.batchInput = toBatchInputs(this.batchInput, undefined);
    this.batchOutput = toBatchOutputs(this.batchOutput);
    if (this.sequenceBatching) {
      // A cached answer would skip the sequence's state; a warmup request belongs to no sequence.
      if (this.decoupled) throw new TritonError('INVALID_CONFIG', 'invalid ModelConfig: a decoupled model cannot have a sequence batcher');
      if (this.responseCache) throw new TritonError('INVALID_CONFIG', 'invalid ModelConfig: a model with a sequence batcher cannot use the response cache');
      if (this.warmup.length > 0) throw new TritonError('INVALID_CONFIG', 'invalid ModelConfig: a model with a sequence batcher takes no warmup');
    }
    if (this.batcher !== null && !(this.batcher instanceof DynamicBatcher)) this.batcher = new DynamicBatcher(this.batcher);
    this.warmup = (this.warmup ?? []).map((w) => (w instanceof WarmupSetting ? w : new WarmupSetting(w)));
  }

  /** `max_batch_size` as Triton reports it: 0 when the model does not batch. */
  get effectiveMaxBatchSize(): number {
    return this.batching ? this.maxBatchSize : 0;
  }
}
