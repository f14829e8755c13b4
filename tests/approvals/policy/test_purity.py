import subprocess
import sys
from pathlib import Path


def test_the_policy_core_imports_no_django():
    root = Path(__file__).resolve().parents[3]
    code = "import sys, approvals.policy; bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework', 'channels')]; assert not bad, bad"
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)
