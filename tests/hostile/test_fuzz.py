"""The hostile-input fuzz suite (see :mod:`tests.hostile.fuzz`): a seeded campaign over every format's fixtures.

Property: every mutated input ends with a clean one-line error naming a file, or a load (with warnings, or clean
when the mutation did no harm), within the time and memory bounds; never a traceback or a hang.

The campaign runs in a process of its own, under an address-space limit: should a regression make an importer loop
and grow for ever (as a BrowserGym summary claiming 10**10 steps once did), it fails this test instead of taking the
machine down; inside that process every input is scanned and inspected in-process.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

from hostile_helpers import REPO

INPUTS = 300  # about a minute on two busy cores; bench/fuzz_inputs.py runs larger campaigns
SEED = 18
ADDRESS_SPACE = 12 << 30


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_every_mutated_input_is_a_clean_error_or_a_load():
    res = subprocess.run([sys.executable, "-m", "tests.hostile.fuzz", "--n", str(INPUTS), "--seed", str(SEED),
                          "--json"], capture_output=True, text=True, timeout=900, cwd=REPO, preexec_fn=_limit,
                         env={**os.environ, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"})
    assert res.stdout, res.stderr[-3000:]
    counts = json.loads(res.stdout)
    failures = "\n".join(f"{f['seed']}: {f['mutation']}: {f['outcome']}: {f['detail']}" for f in counts["failures"])
    assert counts["inputs"] == INPUTS, failures
    assert (counts["tracebacks"], counts["hangs"], counts["memory"], counts["bad_messages"]) == (0, 0, 0, 0), failures
    assert counts["clean_errors"] + counts["loads_with_warnings"] + counts["clean_loads"] == INPUTS
    # The mutations do bite: most inputs end in an error or a warning, and every format was tried.
    assert counts["clean_errors"] > INPUTS // 4 and counts["loads_with_warnings"] > INPUTS // 10
    assert counts["seeds"] >= 13  # the builders of every format, then the real fixtures
    assert res.returncode == 0
