"""Competition plugins end to end, without installing anything: a module and a hand-made `.dist-info` folder (what
`pip install` leaves in site-packages) on PYTHONPATH put a competition in `clinseg.submissions.COMPETITIONS` under its
name, the command line finds it by that name, and a broken plugin is a warning, not a failed `import clinseg`."""
import os, subprocess, sys, textwrap

import pytest

MODULE = textwrap.dedent('''
    "A course's homework, as a package would ship it"
    from clinseg import Competition, Convention, dice_items
    COMPETITION = Competition(
        "my_course", "My course's homework", Convention("my_course", "F", 1), ("Id", "Predicted"), "Id", "Predicted",
        id_pattern=r"img\\d+", id_example="img1", solution_columns=("Id", "Predicted", "Height", "Width"),
        score_items=dice_items)
''')


def fake_distribution(site, name, entry_points):
    "A `<name>-0.1.dist-info` folder in `site` with METADATA and an entry_points.txt of group clinseg.competitions"
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[clinseg.competitions]\n"
                                           + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))


def run(args, site, cwd):
    "Run python with `args`, `site` first on PYTHONPATH, in `cwd` (a folder without the plugin's module)"
    paths = [str(site)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def plugin(tmp_path):
    "(site folder with my_course_hw.py and its dist-info, a work folder with a solution and two submissions)"
    site, work = tmp_path / "site", tmp_path / "work"
    site.mkdir()
    work.mkdir()
    (site / "my_course_hw.py").write_text(MODULE)
    fake_distribution(site, "my_course_hw", {"my_course": "my_course_hw:COMPETITION"})
    (work / "solution.csv").write_text("Id,Predicted,Height,Width\nimg1,2 3,4,5\nimg2,,3,3\n")
    (work / "good.csv").write_text("Id,Predicted\nimg1,2 2\nimg2,\n")
    (work / "bad.csv").write_text("Id,Predicted\nimg1.png,2 2\nimg2,9 5\n")
    return site, work


CHECK_REGISTRY = textwrap.dedent('''
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import clinseg.submissions as s
    import my_course_hw
    assert not [w for w in caught if "competition plugin" in str(w.message)], [str(w.message) for w in caught]
    assert s.COMPETITIONS["my_course"] is my_course_hw.COMPETITION, list(s.COMPETITIONS)
    assert s.get_competition("my_course") is my_course_hw.COMPETITION
    assert {"hw2", "wad2018", "neopolyp", "dsb2018"} <= set(s.COMPETITIONS)
    print("ok")
''')


def test_entry_point_registers_the_competition(plugin):
    site, work = plugin
    r = run(["-c", CHECK_REGISTRY], site, work)
    assert (r.returncode, r.stdout) == (0, "ok\n"), r.stderr


def test_cli_finds_the_competition_by_name(plugin):
    site, work = plugin
    r = run(["-m", "clinseg.cli", "validate", "--competition", "my_course", "good.csv", "--solution", "solution.csv"],
            site, work)
    assert (r.returncode, r.stdout, r.stderr) == (0, "good.csv: ok: 2 rows, 0 errors, 0 warnings\n", "")
    r = run(["-m", "clinseg.cli", "validate", "-c", "my_course", "bad.csv", "--solution", "solution.csv"], site, work)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert ("clinseg: error: bad.csv: row 2: field Id: 'img1.png' is not a valid Id (drop the file extension)"
            in r.stderr)
    assert "clinseg: error: bad.csv: row 3: field Predicted: " in r.stderr and "beyond the 3x3 image" in r.stderr
    r = run(["-m", "clinseg.cli", "score", "-c", "my_course", "solution.csv", "good.csv"], site, work)
    assert (r.returncode, r.stdout) == (0, f"score {(2 * 2 / (2 + 3) + 1.0) / 2:.6f}\n"), r.stderr


def test_without_the_distribution_the_name_is_unknown(plugin, tmp_path):
    site, work = plugin
    r = run(["-m", "clinseg.cli", "validate", "-c", "my_course", "good.csv", "--solution", "solution.csv"],
            tmp_path / "empty", work)
    assert r.returncode == 2 and "unknown competition 'my_course'" in r.stderr


CHECK_BROKEN = textwrap.dedent('''
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import clinseg.submissions as s
        names = list(s.COMPETITIONS)          # plugins load on first use of the registry
    messages = [str(w.message) for w in caught if "competition plugin" in str(w.message)]
    assert len(messages) == 1 and "'broken' (no_such_module_xyz:COMPETITION) did not load" in messages[0], messages
    assert "broken" not in s.COMPETITIONS and "my_course" in s.COMPETITIONS and "dsb2018" in s.COMPETITIONS
    print("ok")
''')


def test_broken_plugin_is_a_warning(plugin):
    site, work = plugin
    fake_distribution(site, "broken_hw", {"broken": "no_such_module_xyz:COMPETITION"})
    r = run(["-c", CHECK_BROKEN], site, work)
    assert (r.returncode, r.stdout) == (0, "ok\n"), r.stderr
    r = run(["-m", "clinseg.cli", "validate", "-c", "my_course", "good.csv", "--solution", "solution.csv"], site, work)
    assert r.returncode == 0 and r.stdout == "good.csv: ok: 2 rows, 0 errors, 0 warnings\n"
    assert "competition plugin 'broken'" in r.stderr and "Traceback" not in r.stderr
