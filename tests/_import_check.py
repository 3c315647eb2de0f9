"""Which ms_memcopy the tests import, and whether a source checkout hides an installed wheel.

``python -m pytest`` puts the current directory first on sys.path (so does PYTHONPATH=<checkout>): run
from a checkout, ``import ms_memcopy`` then finds the checkout's package even where a wheel is
installed, and the tests would pass against code that was never installed. conftest.py reports the
imported copy in the session header and stops the session when a non-editable installed distribution
is shadowed, unless MS_MEMCOPY_TEST_CHECKOUT=1 says that testing the checkout is what is wanted.
"""
import json
from importlib import metadata
from pathlib import Path

CHECKOUT_ENV = "MS_MEMCOPY_TEST_CHECKOUT"
CHECKOUT = Path(__file__).resolve().parents[1]


def installed_distributions():
    """(package directory, editable) of every ms_memcopy distribution on sys.path (a wheel, an
    editable install, a checkout's own egg-info)."""
    found = []
    for dist in metadata.distributions(name="ms_memcopy"):
        direct_url = dist.read_text("direct_url.json")
        editable = bool(direct_url and json.loads(direct_url).get("dir_info", {}).get("editable"))
        found.append((Path(dist.locate_file("ms_memcopy")).resolve(), editable))
    return found


def describe(imported):
    """The session header's line for the package directory imported."""
    where = "this checkout" if imported == CHECKOUT / "ms_memcopy" else "installed"
    return f"ms_memcopy: imported from {imported} ({where})"


def shadowing_problem(imported, installed, checkout_wanted):
    """Why the session must stop, or None: a non-editable installed distribution (of `installed`, from
    installed_distributions()) that the imported copy hides, when testing the checkout was not asked for."""
    if checkout_wanted:
        return None
    hidden = [location for location, editable in installed if not editable and location != imported]
    if not hidden:
        return None
    return (f"ms_memcopy is installed at {hidden[0]}, but the tests would import {imported}: the current "
            f"directory (python -m pytest) or PYTHONPATH puts a checkout first on sys.path. To test the "
            f"installed package run `pytest` or `python -P -m pytest`; to test the checkout (built with "
            f"`python setup.py build_ext --inplace`) set {CHECKOUT_ENV}=1.")
