"""Packaging details pyproject.toml cannot express: the agent image's build context.

The build context lives at the top of the repository (`container/`, where people look for it)
and ships inside the wheel as `skillctl/_container/`, so an installed skillctl can build its own
image (`skillctl image build`) without a checkout. Everything else is in pyproject.toml.

Packages are found as namespace packages: a data folder without an `__init__.py`
(`skillctl/egress/schemas/`, `skillctl/many/schemas/`…) is a package to setuptools too, and one
left out of `packages` ships today only by a deprecated fallback that setuptools warns about on
every build. tests/test_packaging.py checks that the build prints no warning and that the wheel
holds every data file the code opens.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=find_namespace_packages(include=["skillctl", "skillctl.*"], exclude=["*.__pycache__"])
    + ["skillctl._container"],
    package_dir={"skillctl._container": "container"},
    package_data={
        "skillctl": ["**/*.json", "**/*.md", "**/*.yaml", "**/*.txt"],
        "skillctl._container": ["*"],
    },
)
