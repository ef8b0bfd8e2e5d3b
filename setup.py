"""Packaging details pyproject.toml cannot express: the agent image's build context.

The build context lives at the top of the repository (`container/`, where people look for it)
and ships inside the wheel as `skillctl/_container/`, so an installed skillctl can build its own
image (`skillctl image build`) without a checkout. Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["skillctl", "skillctl.*"]) + ["skillctl._container"],
    package_dir={"skillctl._container": "container"},
    package_data={
        "skillctl": ["**/*.json", "**/*.md", "**/*.yaml", "**/*.txt"],
        "skillctl._container": ["*"],
    },
)
