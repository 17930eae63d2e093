"""The same run in three formats, the same verdict: native folders written again as OSWorld result folders and as
ATIF (Harbor) trials with `rollscope convert`, each read back by its importer and scored by one model.

    python bench/format_agreement.py DIR [--limit N] [--model MODEL] [--json]
    python bench/format_agreement.py --quick        # the bundled native samples

DIR holds native trajectory folders (the recorders' output). The target (shared/REWARD_MODEL.md): the same run
imported from two formats gets the same verdict. Figures: runs compared, the share whose verdict, unknown flag and
first deviating step agree with the native folder's in each format, the largest difference of p_success, and
runs whose evidence pieces differ (what a format's log keeps: an OSWorld log keeps no typed text it cannot parse).
The formats get the run's own screenshots (the same pixels); ``osworld_clean`` is the OSWorld folder with the
screenshots the recorder took without the pointer (as OSWorld's are, and as `collect --layout both` writes them):
how much the verdict depends on the pointer being drawn, apart from the format.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

from gui_app.core.errors import RollscopeError  # noqa: E402
from gui_app.core.trajectory import formats  # noqa: E402
from gui_app.training import convert  # noqa: E402
from gui_app.training.dataset import find_trajectories  # noqa: E402
from models.runtime import RewardModel  # noqa: E402

#: (name, layout, screenshots without the pointer)
VARIANTS = (("osworld", "osworld", False), ("atif", "atif", False), ("osworld_clean", "osworld", True))


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("data", nargs="?", default=None, help="folder of native trajectories (--quick: the samples)")
    p.add_argument("--limit", type=int, default=60, help="at most this many runs (a seeded sample)")
    p.add_argument("--model", default=None, help="weights folder or training run (default: the shipped weights)")
    args = p.parse_args()
    _common.data_or_samples(p, args, "a folder of native trajectories")
    fig = _common.Figures(args.json)
    paths = sorted(find_trajectories(Path(args.data)))
    if args.quick:
        args.limit = min(args.limit, 6)
    if len(paths) > args.limit:
        paths = sorted(random.Random(0).sample(paths, args.limit))
    model = RewardModel.load(Path(args.model) if args.model else None)
    agree = {f: {"verdict": 0, "unknown": 0, "first": 0, "evidence": 0} for f, _, _ in VARIANTS}
    max_dp = {f: 0.0 for f, _, _ in VARIANTS}
    n, errors = 0, []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rollscope-formats-") as tmp:
        for path in paths:
            try:
                traj = formats.load(str(path))
                base = model.score(traj)
                other = {f: model.score(formats.load(str(convert.convert(traj, layout, Path(tmp) / f, clean))))
                         for f, layout, clean in VARIANTS}
            except (RollscopeError, OSError, ValueError) as exc:
                errors.append(f"{path}: {exc}")
                continue
            n += 1
            for f, s in other.items():
                agree[f]["verdict"] += s.success == base.success
                agree[f]["unknown"] += s.unknown == base.unknown
                agree[f]["first"] += s.first_error_step == base.first_error_step
                agree[f]["evidence"] += s.evidence == base.evidence
                max_dp[f] = max(max_dp[f], abs(float(s.p_success or 0.0) - float(base.p_success or 0.0)))
    for e in errors[:5]:
        _common.log(f"not compared: {e}")
    fig.add("runs", n, f"native runs of {args.data}")
    fig.add("not_compared", len(errors))
    for f, _, clean in VARIANTS:
        for what, count in agree[f].items():
            fig.add(f"{what}_agreement_{f}", count / n if n else float("nan"),
                    f"share of runs ({f} vs native{', screens without the pointer' if clean else ''})")
        fig.add(f"max_abs_dp_{f}", max_dp[f], "largest |p_success difference|")
    fig.add("seconds", time.monotonic() - t0, "s")
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
