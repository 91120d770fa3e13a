"""The packed package installed into an empty project, as a user installs it: `npm install tstriton` with no
`.npmrc`, so nothing may download from outside the npm registry.

onnxruntime-node is an optional peer dependency: the install leaves it out (its install script downloads the
CUDA libraries from outside the registry and fails where that is unreachable), a server of TypeScript functions
runs without it, and serving an ONNX model fails with an error that names the package and how to install it.
Installing it then with `npm_config_onnxruntime_node_install=skip` — the setting its script reads
(node_modules/onnxruntime-node/script/install.js: `--onnxruntime-node-install=skip`, as the environment
variable npm passes it) and the one the README gives for CPU-only and offline installs — adds only the CPU
binaries in the npm package, and the same ONNX model then serves and infers.

Every entry point in package.json's `exports` loads, and so does the command line (`npx tstriton --help`). The
README's Quick start, read from README.md as it stands, is served by the command the README gives for it
(`npx tstriton serve --module quickstart.ts`), beside a module whose worker instances load a `.ts` file and a
repository's `model.ts`: each has a decorator and loads with no build step (esbuild, a dependency of the package,
compiles it), in a project with no `typescript`, with the newest `typescript` the registry has, and with TypeScript 5.
With each of those two, the Quick start type-checks with `tsc --strict` and `skipLibCheck` off, under standard
decorators and again under `experimentalDecorators`.

Slow steps (npm pack, npm install) run with generous timeouts and `--prefer-offline`; the package is packed from
a fresh clone of the repository's HEAD, never built, as a user's `npm pack` of a checkout would be.
"""
import json
import os
import re
import shlex
import shutil
import subprocess

import numpy as np
import pytest
import tritonclient.http as httpclient

from deploy_support import ROOT, start_server, stop_server

MISSING_ORT = ("serving ONNX models needs the 'onnxruntime-node' package: npm install onnxruntime-node "
               "(set ONNXRUNTIME_NODE_INSTALL=skip to skip its CUDA download)")
NPM_FLAGS = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]
ONNX_MODEL = ROOT / "test" / "fixtures" / "onnx" / "identity_fp32.onnx"
MANIFEST = json.loads((ROOT / "package.json").read_text())

# A server of TypeScript-style functions in plain JavaScript, through the package's public API only.
SERVER_JS = """
const { Triton, tensor } = require('tstriton');
const { batch } = require('tstriton/decorators');

const triton = new Triton();
triton.bind({
  modelName: 'add_one',
  inferFunc: batch(async ({ x }) => ({ y: tensor('FP32', x.shape, x.data.map((v) => v + 1)) })),
  inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
  config: { maxBatchSize: 8 },
});
void triton.serve().then((code) => process.exit(code));
"""

# Every public entry point, type-checked against the package's declarations (skipLibCheck off).
CONSUMER_TS = """
import { Triton, onnxModel, tensor, type OnnxModelInit, type OnnxModelSpec, type Tensor } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { ModelClient } from 'tstriton/client';
import { toPbtxt } from 'tstriton/config';

const init: OnnxModelInit = { path: 'model.onnx', devices: ['cpu'] };
export const declare = (): OnnxModelSpec => onnxModel(init);
const triton = new Triton();
triton.bind({
  modelName: 'add_one',
  inferFunc: batch(async ({ x }: Record<string, Tensor>) => ({ y: tensor('FP32', x!.shape, (x!.data as Float32Array).map((v) => v + 1)) })),
  inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
});
export { ModelClient, toPbtxt };
"""

# Beside the Quick start: a module whose worker instances load a .ts file, and a repository model.ts, each decorated.
WORKERS_TS = """
import { workers, type Triton } from 'tstriton';

export default function bind(triton: Triton): void {
  triton.bind({
    modelName: 'add_one_worker',
    inferFunc: workers({ module: require.resolve('./add-one.ts') }),
    inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
}
"""
ADD_ONE_TS = """
import { tensor, type Tensor } from 'tstriton';
import { batch } from 'tstriton/decorators';

export default class AddOne {
  @batch
  async infer({ x }: Record<string, Tensor>) {
    return { y: tensor('FP32', x!.shape, (x!.data as Float32Array).map((v) => v + 1)) };
  }
}
"""
SCALE_MODEL_TS = """
import { tensor, type Tensor } from 'tstriton';
import { batch } from 'tstriton/decorators';

export default class Scale {
  factor = 3;

  @batch
  async execute({ x }: Record<string, Tensor>) {
    return { y: tensor('FP32', x!.shape, (x!.data as Float32Array).map((v) => v * this.factor)) };
  }
}
"""
SCALE_CONFIG = """backend: "tstriton"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ]
"""
# The typescript a user's project may hold: none, the newest the registry has, TypeScript 5.
TYPESCRIPTS = ["none", "latest", "5"]
TSC_FLAGS = ["--noEmit", "--strict", "--skipLibCheck", "false", "--target", "es2022", "--module", "nodenext",
             "--moduleResolution", "nodenext", "--types", "node"]


def readme_quick_start():
    """The README's Quick start, verbatim: the TypeScript block under '## Quick start', and the command after it
    that serves it (its shell comment left out)."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Quick start"):]
    section = section[:section.index("\n## ", 1)]
    code = re.search(r"^```ts[^\n]*\n(.*?)^```", section, re.S | re.M)
    command = re.search(r"^```(?:bash|sh)[^\n]*\n(.*?)^```", section, re.S | re.M)
    assert code and command, "README.md's Quick start has a ```ts block and a ```bash block that serves it"
    return code.group(1), shlex.split(command.group(1), comments=True)


def is_npm_setting(name):
    """True for the npm settings an enclosing `npm test` exports (its `.npmrc` skip among them) and for
    onnxruntime-node's own install variables: none of them is in a user's shell."""
    return name.lower().startswith(("npm_config_", "npm_package_", "npm_lifecycle_")) or name.startswith("ONNXRUNTIME_NODE_INSTALL")


def user_env(**extra):
    """The environment of a user's shell, `extra` on top."""
    env = {k: v for k, v in os.environ.items() if not is_npm_setting(k)}
    env.update(extra)
    return env


@pytest.fixture
def user_shell(monkeypatch):
    """This process's environment as a user's shell, for the servers start_server starts from it."""
    for name in [k for k in os.environ if is_npm_setting(k)]:
        monkeypatch.delenv(name)


def npm(args, cwd, timeout=600, **env):
    return subprocess.run(["npm", *args], cwd=cwd, env=user_env(**env), capture_output=True, text=True,
                          timeout=timeout)


def ports_env():
    return {"TSTRITON_HTTP_PORT": "0", "TSTRITON_GRPC_PORT": "0", "TSTRITON_METRICS_PORT": "0"}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """An empty project (a package.json, no .npmrc) with the package installed, packed from a clone that was never
    built: `npm pack` builds it (prepack)."""
    clone = tmp_path_factory.mktemp("clone") / "tstriton"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    assert not (clone / "dist").exists()
    (clone / "node_modules").symlink_to(ROOT / "node_modules")
    where = tmp_path_factory.mktemp("user-project")
    packed = subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(where)], cwd=clone,
                            env=user_env(), capture_output=True, text=True, check=True,
                            timeout=600).stdout.strip().splitlines()[-1]
    (where / "package.json").write_text(json.dumps({"name": "user-project", "version": "1.0.0", "private": True}))
    assert not (where / ".npmrc").exists()
    installed = npm(["install", *NPM_FLAGS, f"./{packed}"], cwd=where)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    shutil.copy(ONNX_MODEL, where / "model.onnx")
    (where / "server.js").write_text(SERVER_JS)
    return where


@pytest.fixture(scope="module")
def with_onnxruntime(project, tmp_path_factory):
    """The same project, copied, with onnxruntime-node added as the README says for a CPU-only/offline install."""
    where = tmp_path_factory.mktemp("user-project-onnx") / "project"
    shutil.copytree(project, where, symlinks=True)
    version = MANIFEST["peerDependencies"]["onnxruntime-node"]
    installed = npm(["install", *NPM_FLAGS, f"onnxruntime-node@{version}"], cwd=where,
                    npm_config_onnxruntime_node_install="skip")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return where


@pytest.fixture(scope="module", params=TYPESCRIPTS)
def with_typescript(project, tmp_path_factory, request):
    """A copy of the project with `typescript@<param>` (and @types/node) installed, or none: (folder, param)."""
    where = tmp_path_factory.mktemp(f"user-project-ts-{request.param}") / "project"
    shutil.copytree(project, where, symlinks=True)
    if request.param != "none":
        tools = [f"typescript@{request.param}", f"@types/node@{MANIFEST['devDependencies']['@types/node']}"]
        installed = npm(["install", *NPM_FLAGS, *tools], cwd=where)
        assert installed.returncode == 0, installed.stdout + installed.stderr
    return where, request.param


def infer(server, model, name, x, output):
    client = httpclient.InferenceServerClient(server.http_url)
    tensor = httpclient.InferInput(name, list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return client.infer(model, [tensor]).as_numpy(output)


def test_onnxruntime_is_an_optional_peer_dependency():
    assert "onnxruntime-node" not in MANIFEST["dependencies"]
    assert MANIFEST["peerDependenciesMeta"]["onnxruntime-node"] == {"optional": True}
    assert MANIFEST["devDependencies"]["onnxruntime-node"] == MANIFEST["peerDependencies"]["onnxruntime-node"]


def test_install_without_npmrc_leaves_onnxruntime_out(project):
    assert (project / "node_modules" / "tstriton" / "dist" / "lib" / "index.js").exists()
    assert not (project / "node_modules" / "onnxruntime-node").exists()
    assert not (project / "node_modules" / "onnxruntime-common").exists()


def test_typescript_functions_serve_without_onnxruntime(project, user_shell):
    server = start_server(command=["node", "server.js"], cwd=project, env=ports_env(), timeout=60)
    try:
        x = np.array([[1, 2, 3], [-1.5, 0, 41]], np.float32)
        np.testing.assert_array_equal(infer(server, "add_one", "x", x, "y"), x + 1)
    finally:
        assert stop_server(server) == 0, "".join(server.log)


def test_serving_onnx_without_onnxruntime_names_the_package(project):
    run = subprocess.run(["npx", "--no-install", "tstriton", "serve", "model.onnx"], cwd=project,
                         env=user_env(**ports_env()), capture_output=True, text=True, timeout=120)
    assert run.returncode != 0, run.stdout + run.stderr
    assert MISSING_ORT in run.stderr, run.stdout + run.stderr


def test_public_types_need_no_onnxruntime(project, tmp_path):
    """The declarations of every entry point type-check with skipLibCheck off where onnxruntime-node is absent
    (in a copy, so that the project keeps only what `npm install tstriton` put there)."""
    where = tmp_path / "project"
    shutil.copytree(project, where, symlinks=True)
    tools = [f"typescript@{MANIFEST['devDependencies']['typescript']}", f"@types/node@{MANIFEST['devDependencies']['@types/node']}"]
    installed = npm(["install", *NPM_FLAGS, *tools], cwd=where)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert not (where / "node_modules" / "onnxruntime-node").exists()
    (where / "consumer.ts").write_text(CONSUMER_TS)
    # noImplicitAny off: the declarations import express, whose types (@types/express) a user may not have.
    checked = subprocess.run(["npx", "--no-install", "tsc", "--noEmit", "--strict", "--noImplicitAny", "false",
                              "--skipLibCheck", "false", "--module", "nodenext", "--moduleResolution", "nodenext",
                              "--types", "node", "consumer.ts"],
                             cwd=where, env=user_env(), capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_onnx_serves_once_onnxruntime_is_installed_without_its_cuda_download(with_onnxruntime, user_shell):
    ort = with_onnxruntime / "node_modules" / "onnxruntime-node"
    assert json.loads((ort / "package.json").read_text())["version"]
    binaries = ort / "bin" / "napi-v6" / "linux" / "x64"
    if binaries.exists():  # the CPU binaries ship in the package; the CUDA ones were skipped
        assert (binaries / "onnxruntime_binding.node").exists()
        assert not (binaries / "libonnxruntime_providers_cuda.so").exists()
    server = start_server(command=["npx", "--no-install", "tstriton", "serve", "model.onnx"], cwd=with_onnxruntime,
                          env=ports_env(), timeout=90)
    try:
        x = np.arange(2 * 16, dtype=np.float32).reshape(2, 16) - 7.25
        np.testing.assert_array_equal(infer(server, "model", "INPUT0", x, "OUTPUT0"), x)
    finally:
        stop_server(server)


def test_every_entry_point_loads(project):
    """`require` of every subpath package.json exports, in the project with only the production dependencies."""
    entries = ["tstriton" + name[1:] for name in MANIFEST["exports"] if name != "./package.json"]
    assert "tstriton" in entries and "tstriton/decorators" in entries and "tstriton/client" in entries
    script = "for (const e of %s) { const m = require(e); if (Object.keys(m).length === 0) throw new Error(e + ' exports nothing'); }" % json.dumps(entries)
    run = subprocess.run(["node", "-e", script], cwd=project, env=user_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_command_line_runs(project):
    run = subprocess.run(["npx", "--no-install", "tstriton", "--help"], cwd=project, env=user_env(), capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tstriton serve" in run.stdout, run.stdout


def test_typescript_models_serve_without_a_build_step(with_typescript, user_shell):
    """The Quick start served by the README's own command, with a worker instance's .ts module and a repository
    model.ts beside it: every file decorated, loaded with whichever typescript the project has, or none."""
    where, typescript = with_typescript
    assert (where / "node_modules" / "typescript").exists() == (typescript != "none")
    code, command = readme_quick_start()
    assert command[:4] == ["npx", "tstriton", "serve", "--module"], command
    (where / command[4]).write_text(code)
    (where / "workers.ts").write_text(WORKERS_TS)
    (where / "add-one.ts").write_text(ADD_ONE_TS)
    (where / "models" / "scale" / "1").mkdir(parents=True, exist_ok=True)
    (where / "models" / "scale" / "config.pbtxt").write_text(SCALE_CONFIG)
    (where / "models" / "scale" / "1" / "model.ts").write_text(SCALE_MODEL_TS)
    server = start_server(command=["npx", "--no-install", *command[1:], "--module", "workers.ts", "--model-repository", "models"],
                          cwd=where, env=ports_env(), timeout=120)
    try:
        client = httpclient.InferenceServerClient(server.http_url)
        inputs = []
        for name in ("a", "b"):
            tensor = httpclient.InferInput(name, [1, 4], "FP32")
            tensor.set_data_from_numpy(np.ones((1, 4), np.float32))
            inputs.append(tensor)
        np.testing.assert_array_equal(client.infer("add_sub", inputs).as_numpy("add"), np.full((1, 4), 2, np.float32))
        x = np.array([[1, 2, 3], [-1.5, 0, 41]], np.float32)
        np.testing.assert_array_equal(infer(server, "add_one_worker", "x", x, "y"), x + 1)
        np.testing.assert_array_equal(infer(server, "scale", "x", x, "y"), x * 3)
    finally:
        stop_server(server)  # npx, signalled with the server, exits on the signal: its code says nothing here


@pytest.mark.parametrize("with_typescript", ["latest", "5"], indirect=True)
@pytest.mark.parametrize("decorators", ["standard", "experimentalDecorators"])
def test_readme_quick_start_type_checks(with_typescript, decorators):
    """tsc --strict with skipLibCheck off, under standard decorators (TypeScript's default) and experimentalDecorators."""
    where, typescript = with_typescript
    version = subprocess.run(["npx", "--no-install", "tsc", "--version"], cwd=where, env=user_env(), capture_output=True,
                             text=True, timeout=120)
    assert version.returncode == 0, version.stdout + version.stderr
    if typescript == "5":
        assert version.stdout.startswith("Version 5."), version.stdout
    code, _ = readme_quick_start()
    (where / "quickstart-typed.ts").write_text(code)
    flags = TSC_FLAGS + (["--experimentalDecorators"] if decorators == "experimentalDecorators" else [])
    checked = subprocess.run(["npx", "--no-install", "tsc", *flags, "quickstart-typed.ts"], cwd=where, env=user_env(),
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, version.stdout + checked.stdout + checked.stderr
