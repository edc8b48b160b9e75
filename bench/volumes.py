"""Inputs shared by the volume benchmarks (bench_dice.py, bench_surface.py): the real KiTS19 label's path (under
CLINSEG_DATA) and two overlapping spheres."""
import sys
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run from a checkout without installing
from clinseg.samples import missing_sample, real_sample   # noqa: E402

KITS_PARTS = ("kits19", "case_00061", "segmentation.nii.gz")
KITS = real_sample(*KITS_PARTS, quiet=True)   # None when CLINSEG_DATA does not have it (in CI: an error)
KITS_MISSING = missing_sample(*KITS_PARTS)


def spheres(shape, r1, r2, shift=(6, 2, 3)):
    "Two overlapping spheres in the middle of the volume"
    z, y, x = (np.arange(n, dtype=np.float32) - n / 2 for n in shape)
    z, y, x = z[:, None, None], y[None, :, None], x[None, None, :]
    a = z ** 2 + y ** 2 + x ** 2 < r1 ** 2
    b = (z - shift[0]) ** 2 + (y - shift[1]) ** 2 + (x - shift[2]) ** 2 < r2 ** 2
    return a, b
