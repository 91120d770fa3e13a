#!/usr/bin/env python3
"""Our .proto files (lib/protocol/proto) against tritonclient's generated descriptors.

Every message, enum and service in tritonclient's `model_config_pb2` and `service_pb2` must match ours
(field names, numbers, types, labels, type names, oneof membership; enum values; RPC names, request/response
types, streaming flags), and health.proto must be the standard grpc.health.v1 one.

Needs tritonclient[grpc] and grpcio-tools (grpc_tools.protoc). grpcio-tools must be installed with
tritonclient's protobuf pin, or pip upgrades protobuf past what tritonclient allows:
    pip install grpcio-tools grpcio-health-checking "protobuf>=6.30,<7"
Also runs as a script: python test_proto_fields.py [PROTO_DIR]
"""
import os
import sys
import tempfile

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

pytestmark = pytest.mark.runs_once(reason="starts no server: compares .proto files")

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_DIR = os.path.join(HERE, "..", "..", "lib", "protocol", "proto")
FILES = ["model_config.proto", "grpc_service.proto", "health.proto"]


def compile_ours(proto_dir):
    try:
        from grpc_tools import protoc
        import grpc_tools
    except ImportError as err:
        raise AssertionError(
            'grpcio-tools is missing: pip install grpcio-tools grpcio-health-checking "protobuf>=6.30,<7"') from err
    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    out = os.path.join(tempfile.mkdtemp(), "set.pb")
    rc = protoc.main(["protoc", f"-I{proto_dir}", f"-I{wkt}", "--include_imports",
                      f"--descriptor_set_out={out}"] + FILES)
    assert rc == 0, f"protoc failed ({rc})"
    fds = descriptor_pb2.FileDescriptorSet()
    with open(out, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fdp in fds.file:
        pool.Add(fdp)
    return pool


def field_sig(f):
    is_map = bool(f.message_type and f.message_type.GetOptions().map_entry)
    tname = ""
    if f.message_type is not None:
        tname = f.message_type.full_name
    elif f.enum_type is not None:
        tname = f.enum_type.full_name
    rep = getattr(f, "is_repeated", None)
    rep = rep() if callable(rep) else (rep if rep is not None else f.label == 3)
    return (f.number, f.type, bool(rep),
            tname, f.containing_oneof.name if f.containing_oneof else None, is_map)


def walk_messages(d):
    yield d
    for n in d.nested_types:
        yield from walk_messages(n)


def walk_enums(file_desc):
    yield from file_desc.enum_types_by_name.values()
    for top in file_desc.message_types_by_name.values():
        for m in walk_messages(top):
            yield from m.enum_types


def compare(proto_dir):
    """Returns (differences, messages, enums, rpcs compared)."""
    import tritonclient.grpc.model_config_pb2 as mc
    import tritonclient.grpc.service_pb2 as svc
    ours = compile_ours(proto_dir)
    diffs, n_msgs, n_enums, n_rpcs = [], 0, 0, 0

    for ref_file in (mc.DESCRIPTOR, svc.DESCRIPTOR):
        our_file = ours.FindFileByName(ref_file.name)
        if our_file.package != ref_file.package:
            diffs.append(f"{ref_file.name}: package {our_file.package!r} != {ref_file.package!r}")
        if [d.name for d in our_file.dependencies] != [d.name for d in ref_file.dependencies]:
            diffs.append(f"{ref_file.name}: imports differ")
        for top in ref_file.message_types_by_name.values():
            for ref in walk_messages(top):
                n_msgs += 1
                try:
                    mine = ours.FindMessageTypeByName(ref.full_name)
                except KeyError:
                    diffs.append(f"missing message {ref.full_name}"); continue
                if mine.file.name != ref.file.name:
                    diffs.append(f"{ref.full_name}: defined in {mine.file.name}, expected {ref.file.name}")
                rf = {f.name: field_sig(f) for f in ref.fields}
                mf = {f.name: field_sig(f) for f in mine.fields}
                for name in sorted(set(rf) | set(mf)):
                    if name not in mf:
                        diffs.append(f"{ref.full_name}.{name}: missing (ref {rf[name]})")
                    elif name not in rf:
                        diffs.append(f"{ref.full_name}.{name}: extra (ours {mf[name]})")
                    elif rf[name] != mf[name]:
                        diffs.append(f"{ref.full_name}.{name}: ours {mf[name]} != ref {rf[name]}")
                if sorted(o.name for o in ref.oneofs) != sorted(o.name for o in mine.oneofs):
                    diffs.append(f"{ref.full_name}: oneofs differ")
        for ref in walk_enums(ref_file):
            n_enums += 1
            try:
                mine = ours.FindEnumTypeByName(ref.full_name)
            except KeyError:
                diffs.append(f"missing enum {ref.full_name}"); continue
            rv = {v.name: v.number for v in ref.values}
            mv = {v.name: v.number for v in mine.values}
            if rv != mv:
                diffs.append(f"enum {ref.full_name}: ours {mv} != ref {rv}")
        for rs in ref_file.services_by_name.values():
            ms = ours.FindServiceByName(rs.full_name)
            rm = {m.name: (m.input_type.full_name, m.output_type.full_name,
                           m.client_streaming, m.server_streaming) for m in rs.methods}
            mm = {m.name: (m.input_type.full_name, m.output_type.full_name,
                           m.client_streaming, m.server_streaming) for m in ms.methods}
            n_rpcs += len(rm)
            for k in sorted(set(rm) | set(mm)):
                if rm.get(k) != mm.get(k):
                    diffs.append(f"rpc {rs.full_name}/{k}: ours {mm.get(k)} != ref {rm.get(k)}")

    # health.proto: tritonclient ships no descriptor; check the standard shape.
    h = ours.FindFileByName("health.proto")
    req = ours.FindMessageTypeByName("grpc.health.v1.HealthCheckRequest")
    resp = ours.FindMessageTypeByName("grpc.health.v1.HealthCheckResponse")
    st = ours.FindEnumTypeByName("grpc.health.v1.HealthCheckResponse.ServingStatus")
    hs = ours.FindServiceByName("grpc.health.v1.Health")
    if h.package != "grpc.health.v1": diffs.append("health: package")
    if [(f.name, f.number, f.type) for f in req.fields] != [("service", 1, 9)]: diffs.append("health: request")
    if [(f.name, f.number, f.enum_type.full_name if f.enum_type else None) for f in resp.fields] != \
            [("status", 1, st.full_name)]: diffs.append("health: response")
    if {v.name: v.number for v in st.values} != {"UNKNOWN": 0, "SERVING": 1, "NOT_SERVING": 2, "SERVICE_UNKNOWN": 3}:
        diffs.append("health: ServingStatus")
    if {m.name: (m.input_type.name, m.output_type.name, m.client_streaming, m.server_streaming)
            for m in hs.methods} != {"Check": ("HealthCheckRequest", "HealthCheckResponse", False, False),
                                     "Watch": ("HealthCheckRequest", "HealthCheckResponse", False, True)}:
        diffs.append("health: service")

    return diffs, n_msgs, n_enums, n_rpcs


def test_protos_match_tritonclient():
    diffs, n_msgs, n_enums, n_rpcs = compare(os.path.abspath(DEFAULT_PROTO_DIR))
    assert diffs == []
    # Guard against comparing nothing (tritonclient has 130 messages, 9 enums and 20 RPCs in these files).
    assert n_msgs >= 100 and n_enums >= 9 and n_rpcs == 20


if __name__ == "__main__":
    found, m, e, r = compare(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_PROTO_DIR))
    print(f"compared {m} messages, {e} enums, {r} rpcs (+ health.proto)")
    for d in found:
        print("DIFF", d)
    print(f"{len(found)} differences")
    sys.exit(1 if found else 0)
