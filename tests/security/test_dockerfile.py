"""The Docker image can sandbox: it installs bubblewrap and the toolchain of every language the
code judge knows (app/judge/languages.py), as root, before the image drops to its own user. A
language added to the judge without its package in the Dockerfile fails here (no Docker
engine is needed: the Dockerfile is read)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from app.judge.languages import LANGUAGES
from app.judge.sandbox import Limits, bwrap_options

DOCKERFILE = Path(__file__).resolve().parents[2] / "Dockerfile"

#: The Debian package that provides each judge language's executable (None: the python base
#: image's own interpreter). A new language needs its line here and its package in the image.
PACKAGES: dict[str, str | None] = {
    "python3": None,
    "javac": "openjdk-17-jdk-headless",
    "gcc": "gcc",
    "g++": "g++",
    "node": "nodejs",
}


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    lines = [
        line for line in DOCKERFILE.read_text().splitlines() if not line.lstrip().startswith("#")
    ]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [
        (keyword.upper(), rest.strip())
        for keyword, _, rest in (line.strip().partition(" ") for line in joined.splitlines())
        if keyword
    ]


def apt_packages(steps: list[tuple[str, str]]) -> set[str]:
    """Packages named by `apt-get install` in RUN steps taken as root (before any USER)."""
    packages: set[str] = set()
    for keyword, arguments in steps:
        if keyword == "USER":
            break
        if keyword != "RUN":
            continue
        for command in re.split(r"&&|;", arguments):
            words = shlex.split(command)
            if words[:2] == ["apt-get", "install"]:
                packages |= {word for word in words[2:] if not word.startswith("-")}
    return packages


def test_the_image_installs_bubblewrap_as_root() -> None:
    assert "bubblewrap" in apt_packages(instructions())


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_the_image_installs_each_judge_languages_toolchain(language: str) -> None:
    executable = LANGUAGES[language].executable
    assert executable in PACKAGES, (
        f"the judge runs {executable!r} for {language}: add its Debian package to the "
        f"Dockerfile's apt-get install and to PACKAGES in {__name__}"
    )
    package = PACKAGES[executable]
    steps = instructions()
    if package is None:
        base = next(arguments for keyword, arguments in steps if keyword == "FROM")
        assert base.startswith("python:3"), f"{executable} comes from the python base image"
    else:
        assert package in apt_packages(steps), f"the Dockerfile does not install {package}"


def test_the_jdk_in_the_image_is_the_one_the_sandbox_mounts() -> None:
    """Java reads its configuration from /etc/java-N-openjdk, mounted by name in the sandbox."""
    jdks = [p for p in apt_packages(instructions()) if re.fullmatch(r"openjdk-\d+-jdk-headless", p)]
    assert len(jdks) == 1, jdks
    version = re.search(r"\d+", jdks[0]).group()
    assert f"/etc/java-{version}-openjdk" in bwrap_options(Path("/tmp"), Limits())
