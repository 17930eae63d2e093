"""``rollscope export-onnx RUN [--out DIR]``: turn a training run into a weights folder, checked against torch."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="training run folder (holds checkpoint.pt)")
    p.add_argument("--out", default=None, help="weights folder to write (default: RUN/export)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gui_app.core.errors import RollscopeError
    from models.export_onnx import export_run

    if not (Path(args.run) / "checkpoint.pt").is_file():
        raise RollscopeError(f"{args.run}: no checkpoint.pt (is this a training run folder?)")
    info = export_run(args.run, args.out or str(Path(args.run) / "export"))
    if args.json:
        print(json.dumps(info))
    else:
        print(f"wrote {info['out']}: model.onnx {info['onnx_bytes'] / 1e6:.2f} MB, pointer.onnx "
              f"{info['pointer_bytes'] / 1e6:.2f} MB; onnxruntime vs torch max abs diff "
              f"{info['onnx_max_abs_diff']:.2e}")
    return 0
