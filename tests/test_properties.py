"""Property-based tests (hypothesis) of the parsers a hostile submission reaches: the RLE parsers, `transcode`, the CSV
reader and `validate`. Each asserts that bad input ends only in a documented error (an `RLEError` or another
`ValueError` subclass naming the problem, a `SubmissionError`, or problems in a `Report`), never in another exception,
and that `validate`'s verdict and `score`'s behaviour agree.

Budget: `CLINSEG_FUZZ_EXAMPLES` examples per test (default 30: the whole file in well under a minute on two cores).
The examples are derandomized, so a run is reproducible; for a longer search run, e.g.,

    CLINSEG_FUZZ_EXAMPLES=2000 CLINSEG_FUZZ_RANDOM=1 pytest tests/test_properties.py -q

(`CLINSEG_FUZZ_RANDOM=1` lets hypothesis draw new examples each run and keep failures in its database.)
"""
import io, os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import clinseg
from clinseg.csvstream import CSVSource, Report, csv_chunks
from clinseg.csvfields import read_both_ways
from clinseg.rle import CONVENTIONS, RLEError, format_runs, get_convention, mask_to_runs, parse_runs, transcode
from clinseg.many_rows import parse_many
from clinseg.competition import SubmissionError
from clinseg.submissions import write_solution

EXAMPLES = int(os.environ.get("CLINSEG_FUZZ_EXAMPLES", "30"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("CLINSEG_FUZZ_RANDOM"),
                database=None if not os.environ.get("CLINSEG_FUZZ_RANDOM") else settings.default.database,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])

# run-length text: mostly the characters a run string is made of, sometimes anything
rle_chars = st.sampled_from(list("0123456789  ||-,\t\n+e") + ["９", "٣", "_", "\x00", "é", "99999999999999999999"])
rle_text = st.one_of(st.lists(rle_chars, max_size=40).map("".join), st.text(max_size=30),
                     st.lists(st.integers(-3, 10**6), max_size=12).map(lambda xs: " ".join(map(str, xs))))
shapes = st.one_of(st.none(), st.tuples(st.integers(1, 40), st.integers(1, 40)),
                   st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4)))
text_presets = [n for n in CONVENTIONS if n != "coco"]


@FUZZ
@given(st.sampled_from(list(CONVENTIONS)), rle_text, shapes)
def test_parse_runs_only_rle_errors(name, text, shape):
    "Any text, any preset: runs that fit the image, or an RLEError"
    try: s, l = parse_runs(text, name, shape)
    except RLEError as e:
        assert str(e)
        return
    assert (np.asarray(l) > 0).all() and (np.asarray(s) >= 0).all()
    if shape is not None and len(s): assert int(np.max(np.asarray(s) + np.asarray(l))) <= int(np.prod(shape))


@FUZZ
@given(st.sampled_from(text_presets), st.lists(rle_text, max_size=8), st.tuples(st.integers(1, 30), st.integers(1, 30)))
def test_parse_many_agrees_with_parse_runs(name, texts, shape):
    "parse_many: the rows parse_runs refuses, with the same runs for the others"
    offsets, starts, lengths, errors = parse_many(texts, name, shape)
    for k, t in enumerate(texts):
        try: s, l = parse_runs(t, name, shape)
        except RLEError:
            assert k in errors
            continue
        assert k not in errors, (t, errors.get(k))
        np.testing.assert_array_equal(starts[offsets[k]:offsets[k + 1]], s)
        np.testing.assert_array_equal(lengths[offsets[k]:offsets[k + 1]], l)


masks = st.tuples(st.integers(1, 12), st.integers(1, 12), st.integers(0, 2**31)).map(
    lambda a: np.random.default_rng(a[2]).random((a[0], a[1])) < np.random.default_rng(a[2] + 1).random())


@FUZZ
@given(masks, st.sampled_from(text_presets), st.sampled_from(text_presets))
def test_transcode_keeps_the_mask(mask, src, dst):
    ("A valid string, rewritten to another convention and back, is the same mask; the text of each is what "
     "format_runs writes")
    a = format_runs(*mask_to_runs(mask, get_convention(src).order), src)
    b = transcode(a, mask.shape, src, dst)
    assert b == format_runs(*mask_to_runs(mask, get_convention(dst).order), dst)
    assert transcode(b, mask.shape, dst, src) == a


@FUZZ
@given(rle_text, shapes, st.sampled_from(text_presets), st.sampled_from(text_presets))
def test_transcode_only_documented_errors(text, shape, src, dst):
    "Any text: a string, or an RLEError / ValueError naming the problem"
    try: out = transcode(text, shape, src, dst)
    except ValueError as e:
        assert str(e)
        return
    assert isinstance(out, str)


# CSV files: lines made of pieces a submission holds, and hostile bytes
pieces = st.sampled_from([b"a,1 2", b"b,3 4", b'"c,d",5', b'"e', b'f"g,6', b"\xc3\xa9,7", b"\xff,8", b"\xe2\x82", b"",
                          b"h,i,j",
                          b"k,9\r", b"\r", b"\x00", b'l,"1""2"', b"m," + b"1 " * 40])
csv_files = st.one_of(
    st.tuples(st.lists(pieces, max_size=14), st.sampled_from([b"\n", b"\r\n", b"\r"]), st.booleans()).map(
        lambda a: b"Id,Value" + a[1] + a[1].join(a[0]) + (a[1] if a[2] else b"")), st.binary(max_size=200),
    st.binary(max_size=120).map(lambda b: b"Id,Value\n" + b))


@FUZZ
@given(csv_files, st.integers(1, 80), st.sampled_from([30, 100, 1 << 28]))
def test_csv_readers_agree(tmp_path_factory, data, block, max_row):
    "The fast path and the csv module: the same rows, line numbers and problems, for any bytes; nothing raised"
    p = tmp_path_factory.mktemp("csv") / "f.csv"
    p.write_bytes(data)
    fast, slow = read_both_ways(p, ("Id", "Value"), block=block, max_row=max_row)
    assert fast == slow
    assert read_both_ways(p, ("Id", "Value"), block=block, max_row=max_row, columnar=True)[0] == fast


@FUZZ
@given(csv_files)
def test_csv_binary_stream_reads_as_the_file(tmp_path_factory, data):
    "A binary stream (which cannot be read twice) is read as its file is"
    p = tmp_path_factory.mktemp("csv") / "f.csv"
    p.write_bytes(data)
    def read(source):
        r = Report("f.csv")
        with CSVSource(source) as src: rows = [(list(ls), rs) for ls, rs,
                                               _ in csv_chunks(src, ("Id", "Value"), r, block=16)]
        return rows, [str(q) for q in r.problems]
    assert read(io.BytesIO(data)) == read(p)


# validate and score agree
IDS = [f"{k:064x}" for k in range(3)]


@pytest.fixture(scope="module")
def solution(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sol")
    truth = {i: np.zeros((6, 7), np.int32) for i in IDS}
    for k, i in enumerate(IDS):
        truth[i][1 + k:3 + k, 1:4] = 1
        truth[i][4:6, 2 + k:5] = 2
    write_solution(tmp / "solution.csv", truth, "dsb2018")
    return tmp / "solution.csv"


row_ids = st.one_of(st.sampled_from(IDS), st.sampled_from(["xyz", IDS[0] + ".png", IDS[1].upper(), ""]))
run_fields = st.one_of(st.lists(st.integers(1, 44), min_size=2, max_size=6).map(lambda xs: " ".join(map(str, xs))),
                       rle_text)
submissions = st.lists(st.tuples(row_ids, run_fields), max_size=8).map(
    lambda rows: "ImageId,EncodedPixels\n" + "".join(f"{i},{r}\n" for i, r in rows))


@FUZZ
@given(st.one_of(submissions, st.text(max_size=80).map(lambda t: "ImageId,EncodedPixels\n" + t)))
def test_validate_and_score_agree(tmp_path_factory, solution, text):
    ("validate ok => score gives a number in [0, 1]; validate not ok => score raises SubmissionError; "
     "nothing else raised")
    p = tmp_path_factory.mktemp("sub") / "sub.csv"
    p.write_text(text, encoding="utf-8", errors="surrogateescape")
    report = clinseg.validate(p, "dsb2018", solution)
    assert all(q.row is None or q.row >= 1 for q in report.problems)
    if report.ok:
        result = clinseg.score(solution, p, "dsb2018")
        assert 0 <= result.score <= 1
    else:
        with pytest.raises(SubmissionError): clinseg.score(solution, p, "dsb2018")
