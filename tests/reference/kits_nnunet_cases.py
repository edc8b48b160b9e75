"""Generated kidney cases for the KiTS21 and nnU-Net tests, tools and benchmark: small label volumes (0 background,
1 kidney, 2 tumour, 3 cyst) with a prediction each, covering the cases evaluation code gets wrong: empty truth, empty
prediction, both empty, one lesion predicted as two pieces, two lesions predicted as one, a missed or an invented
lesion, anisotropic spacing, volumes touching the edge."""
import numpy as np

SCENARIOS = ("perturbed", "empty truth", "empty prediction", "both empty", "lesion split in two", "two merged",
             "tumour missed", "tumour invented", "cyst", "edge")


def ellipsoid(shape, centre, radii):
    "A boolean ellipsoid (voxel units)"
    grids = np.ogrid[tuple(slice(0, n) for n in shape)]
    return sum(((g - c) / r) ** 2 for g, c, r in zip(grids, centre, radii)) <= 1


def _kidney(shape, rng):
    c = [rng.uniform(0.35, 0.65) * n for n in shape]
    r = [rng.uniform(0.22, 0.38) * n for n in shape]
    return ellipsoid(shape, c, r), c, r


def _jitter(mask, rng, p=0.15):
    "Flip a share of the mask's boundary voxels (a prediction that is nearly right)"
    from scipy import ndimage
    edge = mask ^ ndimage.binary_erosion(mask)
    out = mask.copy()
    out[edge & (rng.random(mask.shape) < p)] = False
    grow = ndimage.binary_dilation(mask) & ~mask
    out[grow & (rng.random(mask.shape) < p)] = True
    return out


def make_case(k, rng, shape=(10, 14, 12)):
    "(scenario, pred, truth, spacing) for case number k (scenarios in turn)"
    scenario = SCENARIOS[k % len(SCENARIOS)]
    spacing = (tuple(float(x) for x in rng.uniform(0.5, 5.0, 3)) if k % 3 else
               (float(rng.choice([1.0, 2.5, 5.0])), 0.78125, 0.78125))
    kidney, c, r = _kidney(shape, rng)
    truth = kidney.astype(np.uint8)
    tc = [ci + rng.uniform(-0.3, 0.3) * ri for ci, ri in zip(c, r)]
    tumour = ellipsoid(shape, tc, [max(1.2, 0.45 * ri) for ri in r])
    truth[tumour & kidney] = 2
    pred = np.where(_jitter(kidney, rng), 1, 0).astype(np.uint8)
    pred[_jitter(tumour & kidney, rng) & (pred > 0)] = 2
    if scenario == "empty truth": truth[:] = 0
    elif scenario == "empty prediction": pred[:] = 0
    elif scenario == "both empty": truth[:], pred[:] = 0, 0
    elif scenario == "lesion split in two":       # the tumour predicted with a slab through its middle missing
        pred[pred == 2] = 1
        t = truth == 2
        pred[t] = 2
        z = np.flatnonzero(t.any(axis=(1, 2)))
        if len(z) >= 3: pred[z[len(z) // 2]][t[z[len(z) // 2]]] = 1
    elif scenario == "two merged":                # two small tumours, predicted as one block spanning both
        truth[truth == 2] = 1
        a = ellipsoid(shape, [c[0], c[1] - 0.5 * r[1], c[2]], [1.5, 1.5, 1.5]) & kidney
        b = ellipsoid(shape, [c[0], c[1] + 0.5 * r[1], c[2]], [1.5, 1.5, 1.5]) & kidney
        truth[a | b] = 2
        pred[pred == 2] = 1
        hull = np.zeros(shape, bool)
        zs, ys, xs = np.nonzero(a | b)
        if len(zs): hull[zs.min():zs.max() + 1, ys.min():ys.max() + 1, xs.min():xs.max() + 1] = True
        pred[hull & kidney] = 2
    elif scenario == "tumour missed": pred[pred == 2] = 1
    elif scenario == "tumour invented":
        truth[truth == 2] = 1
    elif scenario == "cyst":
        cyst = ellipsoid(shape, [ci - 0.4 * ri for ci, ri in zip(c, r)], [1.6, 2.0, 2.0]) & (truth == 1)
        truth[cyst] = 3
        pred[np.roll(cyst, 1, axis=1) & (pred > 0)] = 3
    elif scenario == "edge":                      # the kidney cut by the volume's faces
        truth, pred = np.roll(truth, shape[1] // 2, axis=1), np.roll(pred, shape[1] // 2 + 1, axis=1)
    return scenario, pred, truth, spacing


def make_cases(n=40, seed=0, shape=(10, 14, 12)):
    "[(name, scenario, pred, truth, spacing)] for n cases"
    rng = np.random.default_rng(seed)
    return [(f"case_{k:05d}",) + make_case(k, rng, shape) for k in range(n)]
