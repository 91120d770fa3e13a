"""What the deployment tests share: the repository root, and the interop suite's server starter (a tstriton
process on free loopback ports, found by its 'serving' log line), loaded under a name of its own."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_spec = importlib.util.spec_from_file_location("interop_servers", ROOT / "test" / "interop" / "conftest.py")
_interop = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_interop)

start_server = _interop.start_server
stop_server = _interop.stop_server
RunningServer = _interop.RunningServer
