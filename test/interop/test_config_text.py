"""parseModelConfigText and formatModelConfigText agree with Google's text_format on inference.ModelConfig.

Each config.pbtxt of the corpus is read by both parsers; ours answers through test/interop/servers/config-text.js
(on the compiled dist/). The two JSON forms are compared after the differences the formats allow: protobuf's
JSON mapping prints 64-bit integers as strings and leaves out fields at their defaults, ours keeps what the text
wrote.
"""
import json
import math
import subprocess
from pathlib import Path

import pytest
from google.protobuf import descriptor, json_format, text_format
from tritonclient.grpc import model_config_pb2

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.runs_once(reason="starts no server: the config text parser runs the same on any thread count")
GOLDEN = ROOT / "test" / "unit" / "config" / "golden"

INT64_TYPES = {
    descriptor.FieldDescriptor.TYPE_INT64,
    descriptor.FieldDescriptor.TYPE_UINT64,
    descriptor.FieldDescriptor.TYPE_SINT64,
    descriptor.FieldDescriptor.TYPE_FIXED64,
    descriptor.FieldDescriptor.TYPE_SFIXED64,
}

CORPUS = {
    "realistic": """
# A classifier on ONNX Runtime with most of what Triton's model configuration offers.
name: "resnet50"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { specific: { versions: [1, 3] } }
input [
  {
    name: "INPUT0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
    reshape: { shape: [ 1, 3, 224, 224 ] }
  },
  { name: "MASK" data_type: TYPE_BOOL dims: [ -1 ] optional: true }
]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1000 ] label_filename: "labels.txt" } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  preserve_ordering: true
  priority_levels: 3
  default_priority_level: 2
  default_queue_policy {
    timeout_action: REJECT
    default_timeout_microseconds: 1000000
    allow_timeout_override: true
    max_queue_size: 16
  }
  priority_queue_policy { key: 1 value: { timeout_action: DELAY, max_queue_size: 4 } }
  priority_queue_policy { key: 3 value { default_timeout_microseconds: 500 } }
}
instance_group [
  { name: "resnet50_gpu" kind: KIND_GPU count: 2 gpus: [ 0, 1 ] },
  { kind: KIND_CPU count: 1 }
]
parameters: { key: "EXECUTION_ENV_PATH", value: { string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }
parameters { key: "mode" value { string_value: "fast" } }
model_warmup [
  {
    name: "zeros"
    batch_size: 8
    inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 3, 224, 224 ] zero_data: true } }
    count: 2
  },
  {
    name: "random"
    batch_size: 1
    inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 3, 224, 224 ] random_data: true } }
    inputs { key: "MASK" value { data_type: TYPE_BOOL dims: [ 1 ] input_data_file: "mask.bin" } }
  }
]
optimization {
  execution_accelerators {
    gpu_execution_accelerator : [ {
      name : "tensorrt"
      parameters { key: "precision_mode" value: "FP16" }
      parameters { key: "max_workspace_size_bytes" value: "1073741824" }
    }, { name: "cuda" } ]
    cpu_execution_accelerator: [ { name: "openvino" } ]
  }
  input_pinned_memory { enable: false }
  priority: PRIORITY_MAX
}
response_cache { enable: true }
model_transaction_policy { decoupled: False }
""",
    "ensemble": """
name: "ensemble_model"
platform: "ensemble"
max_batch_size: 1
input [ { name: "IMAGE" data_type: TYPE_STRING dims: [ 1 ] } ]
output [
  { name: "CLASSIFICATION" data_type: TYPE_FP32 dims: [ 1000 ] },
  { name: "SEGMENTATION" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] }
]
ensemble_scheduling {
  step [
    {
      model_name: "image_preprocess_model"
      model_version: -1
      input_map { key: "RAW_IMAGE" value: "IMAGE" }
      output_map { key: "PREPROCESSED_OUTPUT" value: "preprocessed_image" }
    },
    {
      model_name: "classification_model"
      model_version: -1
      input_map { key: "FORMATTED_IMAGE" value: "preprocessed_image" }
      output_map { key: "CLASSIFICATION_OUTPUT" value: "CLASSIFICATION" }
    },
    {
      model_name: "segmentation_model"
      model_version: -1
      input_map { key: "FORMATTED_IMAGE" value: "preprocessed_image" }
      output_map { key: "SEGMENTATION_OUTPUT" value: "SEGMENTATION" }
    }
  ]
}
""",
    "ensemble_backpressure": """
name: "pipeline"
platform: "ensemble"
ensemble_scheduling {
  max_inflight_requests: 16

  step [
    {
      model_name: "dali_preprocess"
      model_version: -1
      input_map { key: "RAW_IMAGE", value: "IMAGE" }
      output_map { key: "PREPROCESSED_IMAGE", value: "preprocessed" }
    },
    {
      model_name: "onnx_inference"
      model_version: 3
      model_namespace: "vision"
      input_map { key: "INPUT", value: "preprocessed" }
      output_map { key: "OUTPUT", value: "RESULT" }
    }
  ]
}
""",
    "dynamic_batching": """
name: "simple"
backend: "onnxruntime"
max_batch_size: 16
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
}
instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0 ] }, { count: 2 kind: KIND_GPU gpus: [ 1, 2 ] } ]
""",
    "version_all": 'name: "m"\nversion_policy: { all { }}\n',
    "version_latest": 'name: "m"\nversion_policy: { latest: { num_versions: 2}}\n',
    "version_specific": 'name: "m"\nversion_policy: { specific: { versions: [1,3]}}\n',
    "sequence_batching": """
name: "stateful"
backend: "python"
max_batch_size: 4
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [
    {
      input_name: "INPUT_STATE"
      output_name: "OUTPUT_STATE"
      data_type: TYPE_INT32
      dims: [ -1 ]
      initial_state: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: "initial state" }
      use_same_buffer_for_input_output: true
    }
  ]
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 100 }
}
""",
    "ragged_batching": """
name: "ragged"
backend: "tensorrt"
max_batch_size: 16
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]
batch_input [
  { kind: BATCH_ACCUMULATED_ELEMENT_COUNT target_name: "INDEX" data_type: TYPE_FP32 source_input: "INPUT" },
  { kind: BATCH_ITEM_SHAPE_FLATTEN target_name: [ "SHAPE" ] data_type: TYPE_INT64 source_input: [ "INPUT" ] }
]
batch_output [ { target_name: "OUTPUT" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT" } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ -1 ] is_shape_tensor: false } ]
""",
    "tensorrt_cuda_graphs": """
name: "trt"
platform: "tensorrt_plan"
max_batch_size: 8
optimization {
  graph { level: 1 }
  cuda {
    graphs: true
    busy_wait_events: true
    output_copy_stream: true
    graph_spec [
      {
        batch_size: 4
        input { key: "INPUT0" value: { dim: [ 3, 224, 224 ] } }
        graph_lower_bound { batch_size: 1 input { key: "INPUT0" value { dim: [ 3, 100, 100 ] } } }
      }
    ]
  }
  gather_kernel_buffer_threshold: 4096
  eager_batching: true
}
instance_group [
  {
    count: 1
    kind: KIND_GPU
    gpus: [ 0 ]
    profile: [ "0", "1" ]
    host_policy: "numa0"
    passive: true
    rate_limiter { resources [ { name: "R1" count: 4 }, { name: "R2" global: true count: 2 } ] priority: 2 }
    secondary_devices [ { kind: KIND_NVDLA device_id: 0 } ]
  }
]
""",
    "python_backend": """
name: "preprocess"
backend: "python"
runtime: "model.py"
max_batch_size: 0
default_model_filename: "model.py"
cc_model_filenames { key: "8.6" value: "model_sm86.plan" }
metric_tags { key: "team" value: "vision" }
model_transaction_policy { decoupled: True }
model_operations { op_library_filename: [ "libcustom.so" ] }
model_repository_agents { agents [ { name: "checksum" parameters { key: "MD5:model.py" value: "abc" } } ] }
model_metrics {
  metric_control [
    { metric_identifier { family: "nv_inference_first_response_histogram_ms" }
      histogram_options { buckets: [ 1, 10.5, 100, 1e3 ] } }
  ]
}
parameters: { key: "EXECUTION_ENV_PATH", value: {string_value: "$$TRITON_MODEL_DIRECTORY/python3.8.tar.gz"} }
""",
    "grammar": r"""
# every spelling the text format allows, in one file
name: 'grammar' "_model";
platform: "onnx\x72untime\137onnx",
max_batch_size: 0x10
input < name: "a\tb\n\"c\"\\" data_type: 11 format: 2 dims: [ 017, -1 ] >
input: { name: "caf\303\251 模型" data_type: TYPE_STRING; dims: 1; }
sequence_batching {
  direct { max_queue_delay_microseconds: 10 minimum_slot_utilization: .5f }
  control_input { name: "C" control { fp32_false_true: [ 1e-3, 2.5E+2, 3F, inf, -inf, Infinity, nan, -1.5 ] bool_false_true: [ t, f, True, False, 1, 0 ] } }
}
""",
}

REFUSED = {
    "unknown_field": ('name: "m"\nmax_batch: 4\n', "config.pbtxt:2:1: unknown field 'max_batch'"),
    "unknown_nested_field": ('input { name: "a" nme: "b" }', "config.pbtxt:1:19: unknown field 'nme'"),
    "bad_enum": ("input { data_type: TYPE_FP33 }", "config.pbtxt:1:20: unknown enum value 'TYPE_FP33' for field 'data_type'"),
    "quoted_enum": ('input { data_type: "TYPE_FP32" }', "config.pbtxt:1:20: field 'data_type'"),
    "string_for_integer": ('max_batch_size: "abc"', "config.pbtxt:1:17: field 'max_batch_size'"),
    "int32_out_of_range": ("max_batch_size: 2147483648", "config.pbtxt:1:17: field 'max_batch_size'"),
    "negative_uint32": ("version_policy { latest { num_versions: -1 } }", "config.pbtxt:1:41: field 'num_versions'"),
    "word_for_bool": ("response_cache { enable: yes }", "config.pbtxt:1:26: field 'enable'"),
    "given_twice": ('name: "a"\nname: "b"', "config.pbtxt:2:1: field 'name' given twice"),
    "two_oneof_members": ("version_policy { all {} latest {} }", "config.pbtxt:1:25: field 'latest' cannot be set with 'all'"),
    "left_open": ('input {\n  name: "a"\n', "config.pbtxt:3:1: expected '}' to close 'input', got end of file"),
    "missing_colon": ('name "m"', "config.pbtxt:1:6: expected ':' after field 'name'"),
    "scalar_for_message": ("response_cache: true", "config.pbtxt:1:17: expected '{' or '<' to open 'response_cache'"),
    "unterminated_string": ('name: "abc\n', "config.pbtxt:1:7: unterminated string"),
    "extension": ("[inference.ext]: 1", "config.pbtxt:1:1: expected a field name"),
}


class ConfigText:
    """The node process that runs the build's parseModelConfigText / formatModelConfigText."""

    def __init__(self):
        self.proc = subprocess.Popen(["node", str(ROOT / "test/interop/servers/config-text.js")], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def ask(self, **request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "config-text.js exited"
        return json.loads(line)

    def parse(self, text):
        answer = self.ask(op="parse", text=text, file="config.pbtxt")
        assert answer["ok"], answer["message"]
        return answer["result"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def ours():
    running = ConfigText()
    yield running
    running.close()


def google(text):
    return text_format.Parse(text, model_config_pb2.ModelConfig())


def is_repeated(field):
    flag = getattr(field, "is_repeated", None)
    return flag if flag is not None else field.label == field.LABEL_REPEATED


def is_map(field):
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def is_default(value, field):
    if field.enum_type is not None:
        return value == field.enum_type.values_by_number[0].name
    return value in (False, 0, "") and not (isinstance(value, float) and math.copysign(1, value) < 0)


def normalise(message, desc, keep_defaults):
    """One JSON form of `message` (a dict of message type `desc`) for both sides: 64-bit integers as ints and,
    unless `keep_defaults`, scalars at their default left out where protobuf has no presence for them."""
    out = {}
    for name, value in message.items():
        field = desc.fields_by_name[name]
        if is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            out[name] = {k: one(v, value_field) for k, v in value.items()}
        elif is_repeated(field):
            out[name] = [one(v, field) for v in value]
        elif (not keep_defaults and field.message_type is None and field.containing_oneof is None
              and is_default(value, field)):
            continue
        else:
            out[name] = one(value, field)
    return out


def one(value, field):
    if field.message_type is not None:
        return normalise(value, field.message_type, keep_defaults=False)
    if field.type in INT64_TYPES and isinstance(value, str):
        return int(value)
    return value


def google_json(msg):
    as_dict = json_format.MessageToDict(msg, preserving_proto_field_name=True, use_integers_for_enums=False)
    return normalise(as_dict, msg.DESCRIPTOR, keep_defaults=True)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_our_parser_reads_what_text_format_reads(ours, name):
    expected = google_json(google(CORPUS[name]))
    got = ours.parse(CORPUS[name])
    assert normalise(got, model_config_pb2.ModelConfig.DESCRIPTOR, keep_defaults=False) == expected
    # Ours is valid input to protobuf's JSON mapping too (non-finite floats travel as its own strings); the
    # grammar file holds a NaN, which makes any message unequal to itself.
    if name != "grammar":
        assert json_format.ParseDict(got, model_config_pb2.ModelConfig()) == google(CORPUS[name])


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_text_format_reads_what_our_writer_writes(ours, name):
    answer = ours.ask(op="reformat", text=CORPUS[name])
    assert answer["ok"], answer["message"]
    assert google_json(google(answer["result"])) == google_json(google(CORPUS[name]))
    # And ours reads its own output back to the same JSON.
    assert ours.parse(answer["result"]) == ours.parse(CORPUS[name])


@pytest.mark.parametrize("name", ["batching", "no-batching"])
def test_text_format_reads_the_written_full_json(ours, name):
    full = json.loads((GOLDEN / f"{name}.json").read_text())
    answer = ours.ask(op="format", json=full)
    assert answer["ok"], answer["message"]
    assert google(answer["result"]) == json_format.ParseDict(full, model_config_pb2.ModelConfig())


def test_ours_refuses_integers_a_javascript_number_cannot_hold(ours):
    text = "dynamic_batching { max_queue_delay_microseconds: 9007199254740993 }"
    assert google(text).dynamic_batching.max_queue_delay_microseconds == 9007199254740993
    answer = ours.ask(op="parse", text=text, file="config.pbtxt")
    assert not answer["ok"]
    assert answer["message"].startswith(
        "config.pbtxt:1:50: field 'max_queue_delay_microseconds' value 9007199254740993 is beyond Number.MAX_SAFE_INTEGER")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_both_refuse(ours, name):
    text, message = REFUSED[name]
    with pytest.raises(text_format.ParseError):
        google(text)
    answer = ours.ask(op="parse", text=text, file="config.pbtxt")
    assert not answer["ok"]
    assert answer["code"] == "INVALID_CONFIG"
    assert answer["message"].startswith(message)
