"""The pointer detector network: a small fully convolutional net giving a heatmap of the pointer's hotspot.

Input ``image`` (B, 3, H, W) float32 in [-1, 1], H and W multiples of 8 (:func:`models.pointer.prepare`).
Output ``heat`` (B, 1, H/4, W/4) logits: a peak where a mouse pointer's hotspot is (arrow tip, hand fingertip,
I-beam centre), nothing where no pointer is drawn. A stride-8 context path (dilated, about 90 px of receptive
field) sees the whole pointer; a stride-4 path keeps the tip's position.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn


@dataclass
class PointerNetConfig:
    """Widths of the detector (the shipped defaults)."""

    c1: int = 16
    c2: int = 24
    c3: int = 40

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _conv(cin: int, cout: int, stride: int = 1, dilation: int = 1) -> nn.Sequential:
    # batch norm trains the small net far faster; onnxruntime folds it into the convolution at load
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, padding=dilation, dilation=dilation, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class PointerNet(nn.Module):
    def __init__(self, cfg: PointerNetConfig | None = None):
        super().__init__()
        self.cfg = cfg = cfg or PointerNetConfig()
        self.down = nn.Sequential(_conv(3, cfg.c1, 2), _conv(cfg.c1, cfg.c2, 2), _conv(cfg.c2, cfg.c2))  # 1/4
        self.context = nn.Sequential(_conv(cfg.c2, cfg.c3, 2), _conv(cfg.c3, cfg.c3, dilation=2),
                                     _conv(cfg.c3, cfg.c3, dilation=4))  # 1/8
        self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
        self.head = nn.Sequential(nn.Conv2d(cfg.c2 + cfg.c3, cfg.c2, 1, bias=False), nn.BatchNorm2d(cfg.c2),
                                  nn.ReLU(inplace=True), _conv(cfg.c2, cfg.c2), nn.Conv2d(cfg.c2, 1, 1))
        last = self.head[-1]
        assert isinstance(last, nn.Conv2d) and last.bias is not None
        nn.init.constant_(last.bias, -4.0)  # start near "no pointer anywhere"

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        f4 = self.down(image)  # (B, c2, H/4, W/4)
        f8 = self.context(f4)  # (B, c3, H/8, W/8)
        return self.head(torch.cat([f4, self.up(f8)], dim=1))  # (B, 1, H/4, W/4)
