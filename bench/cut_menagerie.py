"""Cut the vendored calibration set (tests/data/menagerie/) from a copy of Menagerie.

Menagerie (github.com/m-messer/Menagerie, MIT) is one CS1 Java assignment, a predator/prey
simulator, whose graded submissions were each graded by four people on four skills with
letter grades. This keeps what the calibration benchmark needs and nothing else:

- the submissions with at least two readable grades on every skill, from the batch zips
  the graders saw (``data/batches/*/``);
- of each, the ``.java`` files the students wrote or changed: a file byte-for-byte equal to
  that year's template (the teacher's code) is left out, and so are ``@author`` lines (the
  dataset's own anonymisation removed them; one slipped through);
- the grades as ``item, skill, grader, grade, comment``; graders are the study's participant
  numbers, which name no one.

The code goes into one xz-compressed JSON file (submissions share most of their text, so it
compresses about fifteen to one); the grades stay a readable CSV.

    git clone https://github.com/m-messer/Menagerie /tmp/menagerie
    .venv/bin/python bench/cut_menagerie.py /tmp/menagerie [--items 140] [--seed 15]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import lzma
import random
import re
import subprocess
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_calibration import GRADES, SKILLS  # noqa: E402

COMMIT = "494dcea40b8b6d2e218d069071e9178d4a41edf0"
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "menagerie"
_AUTHOR = re.compile(r"^.*@author\b.*\n?", re.IGNORECASE | re.MULTILINE)


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def normalized(source: bytes) -> str:
    return source.decode("utf-8", "replace").replace("\r\n", "\n").strip()


def templates(repo: Path, commit: str) -> dict[str, set[str]]:
    """Each year's template files, normalized, keyed by year (``18~19``)."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in git(repo, "ls-tree", "-r", "--name-only", commit, "data/template").split():
        name = path.decode()
        if name.endswith(".java"):
            found[name.split("/")[2]].add(normalized(git(repo, "show", f"{commit}:{name}")))
    return found


def own_files(archive: bytes, template: set[str]) -> dict[str, str]:
    """The submission's Java files that are not the template's, ``@author`` lines dropped."""
    files = {}
    with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
        for name in sorted(zipped.namelist()):
            if not name.endswith(".java") or "__MACOSX" in name:
                continue
            text = normalized(zipped.read(name))
            if text not in template:
                files[name] = _AUTHOR.sub("", text) + "\n"
    return files


def graded(repo: Path, commit: str) -> dict[str, list[dict[str, str]]]:
    """Readable grades by submission number, for submissions with two on every skill."""
    rows = csv.DictReader(io.StringIO(git(repo, "show", f"{commit}:data/grades.csv").decode()))
    by_item: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        if row["grade"] in GRADES and row["assignment_number"]:
            by_item[str(int(float(row["assignment_number"])))].append(row)
    return {
        number: grades
        for number, grades in by_item.items()
        if all(sum(g["skill"] == skill for g in grades) >= 2 for skill in SKILLS)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path, help="a clone of m-messer/Menagerie")
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--items", type=int, default=0, help="a seeded sample; 0: all")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    grades = graded(args.repo, args.commit)
    template = templates(args.repo, args.commit)
    listing = git(args.repo, "ls-tree", "-r", "--name-only", args.commit, "data/batches")
    archives = {}
    for path in map(bytes.decode, listing.split()):
        match = re.search(r"/((\d\d~\d\d)_Submission_(\d+))\.zip$", path)
        if match and match.group(3) in grades:
            archives[match.group(3)] = (match.group(1), match.group(2), path)
    numbers = sorted(archives, key=int)
    if args.items:
        numbers = sorted(random.Random(args.seed).sample(numbers, args.items), key=int)
    submissions, lines = {}, []
    for number in numbers:
        item, year, path = archives[number]
        try:
            archive = git(args.repo, "show", f"{args.commit}:{path}")
        except subprocess.CalledProcessError:
            print(f"{item}: not in this copy (a partial clone?), left out")
            continue
        files = own_files(archive, template[year])
        if not files:
            continue
        submissions[item] = files
        for row in grades[number]:
            lines.append((item, row["skill"], row["participant_id"], row["grade"], row["comments"]))
    OUT.mkdir(parents=True, exist_ok=True)
    blob = json.dumps(submissions, sort_keys=True, ensure_ascii=False).encode()
    (OUT / "submissions.json.xz").write_bytes(lzma.compress(blob, preset=9 | lzma.PRESET_EXTREME))
    with (OUT / "grades.csv").open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(("item", "skill", "grader", "grade", "comment"))
        writer.writerows(sorted(lines))
    print(f"{len(submissions)} submissions, {len(lines)} grades -> {OUT}")


if __name__ == "__main__":
    main()
