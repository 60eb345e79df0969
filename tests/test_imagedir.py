"""What ``--images`` confines (issue 33, item 5): image fields name files under the folder (no
absolute paths, no ``..``); links the folder itself holds are followed; the search below it
enters each directory once, so links back to ``.`` end instead of looping."""
from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from capeval.cli.main import app
from capeval.errors import InputError
from capeval.imagedir import ImageDir


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "images"
    (d / "val").mkdir(parents=True)
    (d / "val" / "a.png").write_bytes(b"a")
    (tmp_path / "outside.png").write_bytes(b"o")
    return d


def test_names_and_relative_paths_under_the_folder(folder):
    d = ImageDir(folder)
    assert d.find("a.png") == folder / "val" / "a.png"
    assert d.find("val/a.png") == folder / "val" / "a.png"


@pytest.mark.parametrize("name", ["../outside.png", "val/../../outside.png", "OUTSIDE_ABS"])
def test_fields_cannot_reach_outside(folder, name):
    name = str(folder.parent / "outside.png") if name == "OUTSIDE_ABS" else name
    with pytest.raises(InputError, match="absolute path|leaves --images"):
        ImageDir(folder).find(name)


def test_links_the_folder_holds_are_followed(folder):
    (folder / "linked").symlink_to(folder.parent, target_is_directory=True)
    assert ImageDir(folder).find("linked/outside.png") == folder / "linked" / "outside.png"


def test_cycles_end_and_a_missing_image_is_named(folder):
    (folder / "here").symlink_to(".")
    (folder / "again").symlink_to(".")
    (folder / "val" / "up").symlink_to("..")
    start = time.monotonic()
    with pytest.raises(InputError, match=r"1 image\(s\) not found.*missing.png"):
        ImageDir(folder).resolve(["a.png", "missing.png"], "in.jsonl")
    assert time.monotonic() - start < 10


def test_a_fifo_is_not_an_image(folder):
    import os

    os.mkfifo(folder / "val" / "pipe.png")
    assert ImageDir(folder).find("pipe.png") is None


def test_cli_refuses_an_absolute_image_field_with_images(folder, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "a", "candidate": "a dog", "references": ["a dog"],
                                "image": str(tmp_path / "outside.png")}) + "\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["score", "-i", str(rows), "-m", "bleu4", "--images", str(folder), "-q"])
    assert res.exit_code == 2 and "absolute path" in " ".join(res.output.split()), res.output
