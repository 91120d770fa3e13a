"""Every TypeScript block of README.md and docs/*.md type-checks against the packed package, as a user would paste
it into a project: the package packed from a fresh clone of HEAD (never built: `npm pack` builds it) and installed
with its production dependencies only into an empty project, with `typescript` and `@types/node` (the versions of
the repository's devDependencies) beside it.

The project is what a user writing TypeScript for Node has today: package.json `"type": "module"` (the blocks use
top-level `await`), tsconfig `strict`, `target es2022`, `module`/`moduleResolution nodenext`, `skipLibCheck`
false (the package's declarations are checked too), `types ["node"]`. Each block is a file of its own (a module:
nothing leaks from one block into another), checked with standard (TC39) decorators; a block that uses a
decorator is checked again with `experimentalDecorators`, which the docs say works the same.

A block that is a part on purpose (a signature, a call with `...` in it, a snippet that uses names an earlier
block or the prose defines) is marked a fragment in its fence's info string, ```` ```ts fragment ````, and is
not checked. Any other block must compile: a failure here is a doc to fix, not a block to mark.
"""
import json
import re
import shutil
import subprocess

import pytest

from deploy_support import ROOT
from test_package_install import MANIFEST, NPM_FLAGS, npm, project, user_env  # noqa: F401 (project: a fixture)

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>ts|typescript)(?:\s+(?P<info>.*))?$")
FRAGMENT = "fragment"
DECORATOR = re.compile(r"^\s*@\w", re.MULTILINE)
TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "target": "es2022",
        "module": "nodenext",
        "moduleResolution": "nodenext",
        "skipLibCheck": False,
        "noEmit": True,
        "types": ["node"],
    },
    "include": ["blocks/*.ts"],
}
MODES = {"standard": {}, "experimentalDecorators": {"experimentalDecorators": True}}
DIAGNOSTIC = re.compile(r"^(?P<file>\S.*?)\((?P<line>\d+),(?P<col>\d+)\): error (?P<code>TS\d+): (?P<text>.*)$")


def blocks():
    """(where, file name, code, fragment) of every TypeScript block, where as `docs/x.md:LINE` (the fence's line)."""
    found = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        i = 0
        while i < len(lines):
            fence = FENCE.match(lines[i])
            if not fence:
                i += 1
                continue
            end = i + 1
            while not re.match(r"^\s*```\s*$", lines[end]):
                end += 1
            indent = len(fence["indent"])
            code = "\n".join(line[indent:] for line in lines[i + 1:end]) + "\n"
            where = f"{doc.relative_to(ROOT)}:{i + 1}"
            name = re.sub(r"\W", "_", doc.stem.lower()) + f"_{i + 1}.ts"
            found.append((where, name, code, FRAGMENT in (fence["info"] or "").split()))
            i = end + 1
    return found


BLOCKS = blocks()
CHECKED = [(where, name, code) for where, name, code, fragment in BLOCKS if not fragment]
CASES = [pytest.param(mode, where, name, code, id=f"{where}-{mode}")
         for where, name, code in CHECKED for mode in MODES
         if mode == "standard" or DECORATOR.search(code)]


def parse(output):
    """tsc's diagnostics, file name → its lines (a message's continuation lines joined to it)."""
    diagnostics = {}
    last = None
    for line in output.splitlines():
        found = DIAGNOSTIC.match(line)
        if found:
            last = diagnostics.setdefault(found["file"], [])
            last.append(f"{found['line']}:{found['col']} {found['code']} {found['text']}")
        elif line.startswith(" ") and last is not None:
            last[-1] += "\n" + line
        elif line.strip():
            diagnostics.setdefault("(tsc)", []).append(line)
    return diagnostics


@pytest.fixture(scope="module")
def checked(project, tmp_path_factory):
    """tsc's diagnostics per mode, for every block that is not a fragment, in a copy of the user's project."""
    where = tmp_path_factory.mktemp("docs-project") / "project"
    shutil.copytree(project, where, symlinks=True)
    dev = MANIFEST["devDependencies"]
    installed = npm(["install", *NPM_FLAGS, f"typescript@{dev['typescript']}", f"@types/node@{dev['@types/node']}"],
                    cwd=where)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert not (where / "node_modules" / "onnxruntime-node").exists()
    manifest = json.loads((where / "package.json").read_text())
    (where / "package.json").write_text(json.dumps({**manifest, "type": "module"}))
    (where / "blocks").mkdir()
    for _, name, code in CHECKED:
        (where / "blocks" / name).write_text(code)
    results = {}
    for mode, options in MODES.items():
        config = {**TSCONFIG, "compilerOptions": {**TSCONFIG["compilerOptions"], **options}}
        (where / f"tsconfig.{mode}.json").write_text(json.dumps(config, indent=2))
        run = subprocess.run(["npx", "--no-install", "tsc", "-p", f"tsconfig.{mode}.json", "--pretty", "false"],
                             cwd=where, env=user_env(), capture_output=True, text=True, timeout=600)
        results[mode] = parse(run.stdout + run.stderr)
        assert run.returncode == 0 or results[mode], run.stdout + run.stderr
    return results


def test_the_package_ships_the_docs_its_readme_links_and_a_license(project):
    """The README's `docs/` links, and the docs' links to one another, resolve in the installed package."""
    package = project / "node_modules" / "tstriton"
    assert MANIFEST["license"] == "Apache-2.0"
    license_text = (package / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text
    links = {link for link in re.findall(r"\]\((docs/[^)#\s]+)", (package / "README.md").read_text())}
    assert links, "the README links the docs"
    for doc in (package / "docs").glob("*.md"):
        links |= {f"docs/{link}" for link in re.findall(r"\]\(([\w-]+\.md)", doc.read_text())}
    missing = sorted(link for link in links if not (package / link).is_file())
    assert not missing, missing


def test_the_docs_have_typescript_blocks_that_are_checked():
    assert len(CHECKED) >= 10, [where for where, _, _ in CHECKED]
    assert any(where.startswith("README.md:") for where, _, _ in CHECKED), "the README's Quick start is checked"


@pytest.mark.parametrize(("mode", "where", "name", "code"), CASES)
def test_block_type_checks(checked, mode, where, name, code):
    errors = checked[mode].get(f"blocks/{name}", [])
    assert not errors, f"{where} ({mode}) does not compile:\n" + "\n".join(errors) + "\n\n" + code


@pytest.mark.parametrize("mode", list(MODES))
def test_the_declarations_type_check(checked, mode):
    """Errors in no block: in the package's declarations (skipLibCheck is off), or in tsc's set-up."""
    elsewhere = {file: errors for file, errors in checked[mode].items() if not file.startswith("blocks/")}
    assert not elsewhere, json.dumps(elsewhere, indent=2)
