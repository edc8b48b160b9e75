"""`pytest` writes nothing into the user's home: conftest.py points HOME and the folders Jupyter, IPython and
matplotlib write into at one private temporary folder for the session."""
import os, tempfile
from pathlib import Path

from conftest import HOME_VARS


def test_home_and_config_folders_are_private():
    home = Path(os.environ["HOME"]).resolve()
    assert home.name.startswith("clinseg-pytest-home-") and Path(tempfile.gettempdir()).resolve() in home.parents, home
    for var in HOME_VARS:
        assert (Path(os.environ[var]).resolve() == home
                or home in Path(os.environ[var]).resolve().parents), f"{var}={os.environ[var]}"
    assert Path("~").expanduser().resolve() == home
