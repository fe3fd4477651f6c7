"""The ``popdyn check --all --quick`` run shared by the tests that read it (test_checks.py and
test_landscape_checks.py; all of them in the xdist group "all_quick", so that under ``-n 2`` the
run is made once, on one worker)."""
import io
import json

import pytest

from proofs_checks.cli import main


@pytest.fixture(scope="session")
def all_quick(tmp_path_factory):
    """(status, stdout, stderr, JSON verdicts) of ``--all --quick`` through the CLI."""
    out, err = io.StringIO(), io.StringIO()
    path = tmp_path_factory.mktemp("checks") / "verdicts.json"
    rc = main(["--all", "--quick", "--json", str(path)], out=out, err=err)
    return rc, out.getvalue(), err.getvalue(), json.loads(path.read_text())
