"""Inputs shared by the volume benchmarks (bench_dice.py, bench_surface.py): the real KiTS19 label's path and two
overlapping spheres."""
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KITS = ROOT.parent / "shared/data/kits19/case_00061/segmentation.nii.gz"


def spheres(shape, r1, r2, shift=(6, 2, 3)):
    "Two overlapping spheres in the middle of the volume"
    z, y, x = (np.arange(n, dtype=np.float32) - n / 2 for n in shape)
    z, y, x = z[:, None, None], y[None, :, None], x[None, None, :]
    a = z ** 2 + y ** 2 + x ** 2 < r1 ** 2
    b = (z - shift[0]) ** 2 + (y - shift[1]) ** 2 + (x - shift[2]) ** 2 < r2 ** 2
    return a, b
