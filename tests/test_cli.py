"""The `clinseg` command line as a real subprocess: exit codes, one-line errors, no tracebacks, no overwrites."""
import json, os, subprocess, sys

import numpy as np
import pytest

from clinseg.competitions.dsb2018 import write_dsb
from clinseg.samples import missing_sample, real_sample
from clinseg.submissions import write_solution


def clinseg(*args, cwd=None):
    "Run `python -m clinseg.cli *args`; returns the CompletedProcess (text)"
    return subprocess.run([sys.executable, "-m", "clinseg.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    ids = [f"{k:064x}" for k in range(3)]
    truth = {i: np.zeros((20, 30), np.int32) for i in ids}
    for k, i in enumerate(ids):
        truth[i][2 + k:8 + k, 3:9] = 1
        truth[i][12:15, 10 + k:20] = 2
    write_solution(tmp / "solution.csv", truth, "dsb2018")
    write_dsb(tmp / "good.csv", truth)
    (tmp / "bad.csv").write_text(f"ImageId,EncodedPixels\n{ids[0]},5 3 7 2\n{ids[1]}, 1 1\n{ids[1]},900 2\nxyz,1 1\n")
    return tmp


def test_validate_clean(files):
    r = clinseg("validate", "--competition", "dsb2018", files / "good.csv", "--solution", files / "solution.csv")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok: 6 rows, 0 errors, 0 warnings") and r.stderr == ""


def test_validate_lists_every_problem(files):
    r = clinseg("validate", "-c", "dsb2018", files / "bad.csv", "--solution", files / "solution.csv")
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert "Traceback" not in r.stderr and all(l.startswith("clinseg: ") for l in lines)
    for row, text in [(2, "overlaps pair 0"), (3, "leading space"), (4, "beyond the 20x30 image"),
                      (5, "is not a valid ImageId")]:
        field = "ImageId" if row == 5 else "EncodedPixels"
        assert any(l.startswith(f"clinseg: error: {files / 'bad.csv'}: row {row}: field {field}: ")
                   and text in l for l in lines), (row, r.stderr)


def test_score_text_json_and_table(files, tmp_path):
    r = clinseg("score", "-c", "dsb2018", files / "solution.csv", files / "good.csv")
    assert (r.returncode, r.stdout) == (0, "score 1.000000\npublic 1.000000\n")
    table = tmp_path / "per_image.csv"
    r = clinseg("score", "-c", "dsb2018", files / "solution.csv", files / "good.csv", "--json", "--per-image", table,
                "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["score"] == 1.0 and len(table.read_text().splitlines()) == 4
    before = table.read_text()
    r = clinseg("score", "-c", "dsb2018", files / "solution.csv", files / "good.csv", "--per-image", table)
    assert r.returncode == 1 and r.stderr == f"clinseg: error: {table}: already exists (use --force to replace it)\n"
    assert table.read_text() == before
    r = clinseg("score", "-c", "dsb2018", files / "solution.csv", files / "good.csv", "--per-image", table, "--force")
    assert r.returncode == 0


def test_score_refuses_invalid_submission(files):
    r = clinseg("score", "-c", "dsb2018", files / "solution.csv", files / "bad.csv")
    assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.count("clinseg: error: ") >= 4


def test_errors_are_one_line(files, tmp_path):
    r = clinseg("score", "-c", "dsb2018", files / "solution.csv", tmp_path / "nope.csv")
    assert (r.returncode, r.stderr) == (1, f"clinseg: error: {tmp_path / 'nope.csv'}: no such file or directory\n")
    # a DSB file read as NeoPolyp: the competition is named
    r = clinseg("validate", "-c", "neopolyp", files / "good.csv")
    assert (r.returncode, r.stderr) == (1,
                                        f"clinseg: error: {files / 'good.csv'}: row 1: the header "
                                        "ImageId,EncodedPixels is "
                                           "the dsb2018 submission's: is the competition right? expected Id,Expected\n")
    r = clinseg("score", "-c", "nope", files / "solution.csv", files / "good.csv")
    assert r.returncode == 2 and "unknown competition 'nope'" in r.stderr and "Traceback" not in r.stderr
    r = clinseg("decode", "-c", "dsb2018", "--shape", "3x4", "4 1 13 1", "-o", tmp_path / "m.png")
    assert (r.returncode, r.stderr) == (1,
                                        "clinseg: error: the string: pair 1: start 13 is beyond the 3x4 image (12 "
                                        "pixels)\n")
    r = clinseg("decode", "-c", "dsb2018", "--shape", "3by4", "4 1", "-o", tmp_path / "m.png")
    assert r.returncode == 1 and "--shape '3by4'" in r.stderr
    assert not (tmp_path / "m.png").exists()


@pytest.mark.slow
def test_encode_decode_round_trip(tmp_path):
    from PIL import Image
    mask = np.zeros((3, 4), np.uint8)
    mask[0, 1:3] = 255
    mask[2, 3] = 255
    Image.fromarray(mask).save(tmp_path / "toy.png")
    for conv, golden in [("dsb2018", "4 1 7 1 12 1"), ("neopolyp", "2 2 12 1"), ("wad2018", "1 2|11 1|")]:
        r = clinseg("encode", "-c", conv, tmp_path / "toy.png", "--quiet")
        assert (r.returncode, r.stdout) == (0, golden + "\n")
    (tmp_path / "rle.txt").write_text("4 1 7 1 12 1\r\n")
    r = clinseg("decode", "-c", "dsb2018", "--shape", "3x4", "--input", tmp_path / "rle.txt", "-o",
                tmp_path / "back.png")
    assert r.returncode == 0, r.stderr
    assert (np.array(Image.open(tmp_path / "back.png")) == mask).all()
    r = clinseg("decode", "-c", "dsb2018", "--shape", "3x4", "4 1", "-o", tmp_path / "back.png")
    assert r.returncode == 1 and "already exists" in r.stderr


# the competition page's
HW2_IDS = ["0u7or1fr6v6sblk1mrahwaz9xeuro7p4", "0n7lp2tldbk94mij1752t75tlc3h0pnl", "n2ds2ett5lj2bxy9xm44zhrvsrl3xqss"]


@pytest.mark.slow
def test_hw2_real_ids_validate_and_score(tmp_path):
    ("The homework's ids are 32 characters 0-9 a-z (not hex): the page's three and random ones pass; an unknown one is "
     "named, with a suggestion")
    from clinseg.competitions.hw2 import write_hw2
    rng = np.random.default_rng(5)
    ids = HW2_IDS + ["".join(rng.choice(list("0123456789abcdefghijklmnopqrstuvwxyz"), 32)) for _ in range(20)]
    vols = {i: (np.random.default_rng(k).random((5, 4, 3)) < 0.3).astype(np.uint8) for k, i in enumerate(ids)}
    write_solution(tmp_path / "solution.csv", vols, "hw2")
    write_hw2(tmp_path / "submission.csv", vols)
    r = clinseg("validate", "-c", "hw2", tmp_path / "submission.csv")
    assert r.returncode == 0 and r.stderr == "" and f"ok: {len(ids)} rows, 0 errors" in r.stdout, r.stderr
    r = clinseg("validate", "-c", "hw2", tmp_path / "submission.csv", "--solution", tmp_path / "solution.csv")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = clinseg("score", "-c", "hw2", tmp_path / "solution.csv", tmp_path / "submission.csv")
    assert (r.returncode, r.stdout) == (0, "score 1.000000\n"), r.stderr
    text = (tmp_path / "submission.csv").read_text()
    cut, suffixed = HW2_IDS[0][:12], HW2_IDS[2] + ".nii.gz"
    bad_text = text.replace(f"\n{HW2_IDS[0]},", f"\n{cut},").replace(f"\n{HW2_IDS[2]},", f"\n{suffixed},")
    (tmp_path / "bad.csv").write_text(bad_text)
    r = clinseg("validate", "-c", "hw2", tmp_path / "bad.csv", "--solution", tmp_path / "solution.csv")
    bad = tmp_path / "bad.csv"
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == (f"clinseg: error: {bad}: row 2: field encode: '{cut}' is not a valid encode: it is not in the "
                        "solution "
                        f"({len(ids)} ids); did you mean '{HW2_IDS[0]}'?"), r.stderr
    assert lines[1] == (f"clinseg: error: {bad}: row 4: field encode: '{suffixed}' is not a valid encode (drop the "
                        "file extension): "
                        f"it is not in the solution ({len(ids)} ids); did you mean '{HW2_IDS[2]}'?"), r.stderr
    r = clinseg("score", "-c", "hw2", tmp_path / "solution.csv", bad)
    assert r.returncode == 1 and r.stdout == "" and f"did you mean '{HW2_IDS[0]}'?" in r.stderr

def _real(*parts):
    "The real sample `parts` under CLINSEG_DATA; the test is skipped without it (and fails in CI, where it must be)"
    path = real_sample(*parts, quiet=True)
    if path is None: pytest.skip(missing_sample(*parts))
    return path


def test_real_dsb_solution_and_neopolyp_sample():
    sol = _real("dsb2018", "stage1_solution.csv")
    sample = _real("neopolyp", "sample_submission.csv")
    r = clinseg("score", "-c", "dsb2018", sol, sol, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["score"] == 1.0 and out["public"] == 1.0 and out["items"] == 65
    r = clinseg("validate", "-c", "neopolyp", sample)
    assert r.returncode == 0 and "ok: 400 rows, 0 errors" in r.stdout


def test_user_mistakes_are_one_line_each(files, tmp_path):
    "A file that cannot be read gives its one reason (no list of every image as missing after it), never a traceback"
    from PIL import Image
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "latin1.csv").write_bytes(b"ImageId,EncodedPixels\n" + f"{0:064x}".encode() + b",1 1 \xe9\n")
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(tmp_path / "mask.png")
    sol = files / "solution.csv"
    for name, line in [("empty.csv", "the file is empty: expected the header ImageId,EncodedPixels"),
                       ("latin1.csv", "row 2: not UTF-8 text (invalid continuation byte): save the file as UTF-8"),
                       ("mask.png", "not a CSV text file: it is a PNG image")]:
        r = clinseg("score", "-c", "dsb2018", sol, tmp_path / name)
        assert (r.returncode, r.stdout, r.stderr) == (1, "", f"clinseg: error: {tmp_path / name}: {line}\n"), r.stderr
    r = clinseg("score", "-c", "dsb2018", tmp_path, files / "good.csv")   # a folder given as the solution
    assert (r.returncode, r.stderr) == (1, f"clinseg: error: {tmp_path}: is a folder, expected the solution CSV file\n")
    (tmp_path / "header.csv").write_text("ImageId,EncodedPixels\n")           # read in full: every image has no row
    r = clinseg("score", "-c", "dsb2018", sol, tmp_path / "header.csv")
    assert (r.returncode == 0 and r.stdout.startswith("score 0.000000") and r.stderr.count("no row") == 1
            and "3 images have no row (" in r.stderr)


def test_demo_as_a_user(tmp_path):
    out = tmp_path / "demo"
    r = clinseg("demo", "--out", out, "-c", "neopolyp", "dsb2018")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("competition") and f"files in {out}" in r.stdout and "Traceback" not in r.stderr
    assert (out / "dsb2018" / "submission.csv").is_file() and (out / "neopolyp" / "solution.csv").is_file()
    r = clinseg("demo", "--out", out, "-c", "dsb2018")                  # run twice: refused, nothing replaced
    assert ((r.returncode, r.stdout) == (1, "")
            and r.stderr == f"clinseg: error: {out / 'dsb2018'}: already exists (use --force to write into it)\n")
    r = clinseg("demo", "--out", out / "dsb2018" / "submission.csv", "-c", "dsb2018")   # a file given as the folder
    assert (r.returncode, r.stderr) == (1,
                                        f"clinseg: error: {out / 'dsb2018' / 'submission.csv'}: is a file, expected a "
                                        "folder to write the demo into\n")
    r = clinseg("demo", "--help")
    assert r.returncode == 0 and "--out DIR" in r.stdout and "--force" in r.stdout


@pytest.mark.slow
def test_shape_sizes_one_rule(tmp_path):
    ("--shape: ASCII digits only (whole_number), at most 2**40 pixels (mask_size), and a mask larger than memory is "
     "one line, fast")
    out = tmp_path / "m.png"
    for shape, text in [("２５６x4", "size 1: '２５６' is not a whole number"),
                        ("2_56x4", "size 1: '2_56' is not a whole number"),
                        ("256x-4", "size 2: '-4' is not a whole number"), ("0x4", "a size is 0"),
                        ("2000000x1000000", "more than MAX_MASK_PIXELS = 2**40")]:
        r = clinseg("decode", "-c", "dsb2018", "--shape", shape, "1 1", "-o", out)
        assert ((r.returncode, r.stderr.count("\n")) == (1, 1) and f"clinseg: error: --shape '{shape}': " in r.stderr
                and text in r.stderr), r.stderr
    r = clinseg("decode", "-c", "dsb2018", "--shape", "1000000x1000000", "1 1", "-o", out)   # under 2**40, but 931 GiB
    assert (r.returncode == 1 and r.stderr.count("\n") == 1 and "931 GiB: it does not fit in memory" in r.stderr
            and "unexpected" not in r.stderr), r.stderr
    assert not out.exists()


@pytest.mark.slow
def test_decode_out_of_memory_is_one_line(tmp_path):
    ("A mask that passes the size checks but cannot be allocated (an address-space limit here): one line, no "
     "partial file")
    import resource
    def limit(): return resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    r = subprocess.run([sys.executable, "-m", "clinseg.cli", "decode", "-c", "dsb2018", "--shape", "60000x60000", "1 1",
                        "-o", tmp_path / "m.png"],
                       capture_output=True, text=True, preexec_fn=limit, timeout=120)
    assert (r.returncode == 1 and r.stderr.count("\n") == 1 and "3 GiB: it does not fit in memory" in r.stderr
            and "unexpected" not in r.stderr), r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_output_onto_input_refused_even_with_force(files, tmp_path):
    ("An output that is an input (the same path, a symbolic link to it, a hard link, a file in an input folder) is "
     "refused, and the input kept")
    import shutil
    sub, sol = tmp_path / "sub.csv", tmp_path / "sol.csv"
    shutil.copy(files / "good.csv", sub)
    shutil.copy(files / "solution.csv", sol)
    (tmp_path / "link.csv").symlink_to(sub)
    os.link(sub, tmp_path / "hard.csv")
    before = sub.read_text()
    for out, what, shown in [(sub, "submission", sub), (tmp_path / "link.csv", "submission", sub),
                             (tmp_path / "hard.csv", "submission", sub),
                             (sol, "solution", sol)]:
        r = clinseg("score", "-c", "dsb2018", sol, sub, "--per-image", out, "--force")
        assert (r.returncode, r.stdout) == (1, ""), r.stderr
        assert (r.stderr.startswith(f"clinseg: error: {out}: is the {what} {shown}")
                and r.stderr.endswith("an output never replaces an input, even with --force\n")), r.stderr
    # the input given through the link
    r = clinseg("score", "-c", "dsb2018", sol, tmp_path / "link.csv", "--per-image", sub, "--force")
    assert r.returncode == 1 and "(the same file, through a link)" in r.stderr, r.stderr
    assert sub.read_text() == before
    from PIL import Image
    Image.fromarray(np.zeros((3, 4), np.uint8)).save(tmp_path / "m.png")
    r = clinseg("encode", "-c", "dsb2018", tmp_path / "m.png", "-o", tmp_path / "m.png", "--force")
    assert r.returncode == 1 and "is the image" in r.stderr
    (tmp_path / "rle.txt").write_text("1 1\n")
    r = clinseg("decode", "-c", "dsb2018", "--shape", "3x4", "--input", tmp_path / "rle.txt", "-o",
                tmp_path / "rle.txt", "--force")
    assert r.returncode == 1 and "is the --input" in r.stderr and (tmp_path / "rle.txt").read_text() == "1 1\n"
    # an ordinary output still works
    r = clinseg("score", "-c", "dsb2018", sol, sub, "--per-image", tmp_path / "table.csv")
    assert r.returncode == 0 and (tmp_path / "table.csv").is_file(), r.stderr


@pytest.mark.slow
def test_jobs_capped_and_whole_numbers(files):
    import os as _os
    cpus = len(_os.sched_getaffinity(0)) if hasattr(_os, "sched_getaffinity") else _os.cpu_count()
    r = clinseg("score", "-c", "dsb2018", files / "solution.csv", files / "good.csv", "--jobs", "100000")
    assert r.returncode == 0 and r.stdout.startswith("score 1.000000"), r.stderr
    assert r.stderr == f"clinseg: warning: --jobs 100000: using {cpus}, this machine's CPU count\n"
    for option, value in [("--jobs", "３"), ("--jobs", "2_0"), ("--limit", "1_0"), ("--limit", " 5"),
                          ("--workers", "٢")]:
        r = clinseg("score", "-c", "dsb2018", files / "solution.csv", files / "good.csv", option, value)
        assert (r.returncode == 2 and f"{value!r} is not a whole number >= 0" in r.stderr
                and "Traceback" not in r.stderr), r.stderr


def test_input_errors_name_the_file(tmp_path):
    "An input error without a file name in its message gets one, and is never 'unexpected'"
    img = np.zeros((3, 4, 2), np.uint8)
    import nibabel as nib
    nib.save(nib.Nifti1Image(img, np.eye(4)), tmp_path / "v.nii.gz")
    data = (tmp_path / "v.nii.gz").read_bytes()
    (tmp_path / "cut.nii.gz").write_bytes(data[:len(data) // 2])
    r = clinseg("encode", "-c", "hw2", tmp_path / "cut.nii.gz")
    assert (r.returncode == 1 and r.stderr.count("\n") == 1 and str(tmp_path / "cut.nii.gz") in r.stderr
            and "unexpected" not in r.stderr), r.stderr
