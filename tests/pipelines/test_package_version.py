"""The manifest's package versions come from the METADATA header alone (``package_version``):
they must be ``importlib.metadata.version``'s, package for package."""

from __future__ import annotations

from importlib import metadata

import pytest

from pipelines.run.publish import package_version


def test_every_installed_package_reads_as_importlib_metadata_reads_it():
    names = sorted({d.metadata["Name"] for d in metadata.distributions() if d.metadata["Name"]})
    assert len(names) > 10
    assert {n: package_version(n) for n in names} == {n: metadata.version(n) for n in names}


def test_a_package_not_installed_is_not_found():
    with pytest.raises(metadata.PackageNotFoundError):
        package_version("no-such-package-here")
