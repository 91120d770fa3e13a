"""Turns the openAPIV3Schema of a CustomResourceDefinition into the strict JSON schema (draft-04) that the
manifest tests validate against, with kubeconform and with Python's jsonschema alike:

    python3 test/deploy/schemas/crd_to_jsonschema.py CRD.yaml... [--out test/deploy/schemas]

writes one <kind>-<group's first label>-<version>.json per served version (kubeconform's
'{{ .ResourceKind }}{{ .KindSuffix }}.json' naming).

The conversion keeps every validation rule of the CRD and adds what the API server does on its own:
- an object schema that lists `properties` and does not say `x-kubernetes-preserve-unknown-fields` rejects
  other fields (`additionalProperties: false`): the API server would drop them silently, which hides a typo;
- `nullable: true` admits null;
- `apiVersion` and `kind` must name the resource.
It leaves out what does not validate (descriptions, examples), and stores a subtree that occurs more than once
(the container and pod fields the InferenceService repeats for every predictor, transformer and explainer) once,
under `definitions`, referenced with `$ref`: the same rules, in a file a fraction of the size.
"""
import argparse
import hashlib
import json
import sys
from pathlib import Path

import yaml

SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
DROP = ("description", "example", "externalDocs")
MIN_SHARED = 400  # characters of canonical JSON from which a repeated subtree is shared


def strict(node):
    """The draft-04 form of one CRD schema node (recursively)."""
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in DROP or key == "nullable":
            continue
        if key == "properties":
            out[key] = {name: strict(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = strict(value)
        elif key in SCHEMA_LISTS:
            out[key] = [strict(sub) for sub in value]
        else:
            out[key] = value
    if "properties" in out and "additionalProperties" not in out \
            and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if node.get("nullable"):
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = types + ["null"]
        if "enum" in out:
            out["enum"] = out["enum"] + [None]
    return out


def canonical(node):
    return json.dumps(node, sort_keys=True, separators=(",", ":"))


def share_repeats(schema):
    """Moves each subtree that occurs twice or more (and is not tiny) to `definitions`, leaving `$ref`s."""
    counts = {}

    def count(node):
        if isinstance(node, dict):
            text = canonical(node)
            if len(text) >= MIN_SHARED:
                counts[text] = counts.get(text, 0) + 1
            for sub in children(node):
                count(sub)

    def children(node):
        for key, value in node.items():
            if key == "properties":
                yield from value.values()
            elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
                yield value
            elif key in SCHEMA_LISTS:
                yield from value

    count(schema)
    definitions = {}

    def replace(node, top=False):
        if not isinstance(node, dict):
            return node
        text = canonical(node)
        if not top and counts.get(text, 0) > 1:
            name = "s" + hashlib.sha256(text.encode()).hexdigest()[:12]
            if name not in definitions:
                definitions[name] = None  # placeholder against recursion
                definitions[name] = replace(node, top=True)
            return {"$ref": "#/definitions/" + name}
        out = {}
        for key, value in node.items():
            if key == "properties":
                out[key] = {k: replace(v) for k, v in value.items()}
            elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
                out[key] = replace(value)
            elif key in SCHEMA_LISTS:
                out[key] = [replace(v) for v in value]
            else:
                out[key] = value
        return out

    result = replace(schema, top=True)
    if definitions:
        result["definitions"] = dict(sorted(definitions.items()))
    return result


def convert(crd):
    group = crd["spec"]["group"]
    kind = crd["spec"]["names"]["kind"]
    for version in crd["spec"]["versions"]:
        if not version.get("served", True):
            continue
        schema = strict(version["schema"]["openAPIV3Schema"])
        props = schema.setdefault("properties", {})
        props["apiVersion"] = {"type": "string", "enum": [f"{group}/{version['name']}"]}
        props["kind"] = {"type": "string", "enum": [kind]}
        schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
        schema = share_repeats(schema)
        schema = {"$schema": "http://json-schema.org/draft-04/schema#",
                  "title": f"{kind} {group}/{version['name']}", **schema}
        name = f"{kind.lower()}-{group.split('.')[0]}-{version['name']}.json"
        yield name, schema


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("crds", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args(argv)
    for path in args.crds:
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            for name, schema in convert(crd):
                (args.out / name).write_text(json.dumps(schema, indent=1, sort_keys=False) + "\n")
                print(f"{path.name} -> {name} ({(args.out / name).stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
