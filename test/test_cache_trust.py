"""The compiled-model cache holds code that is run: it trusts only what this user wrote and
nothing changed since (issue: an edited source loaded 'from the cache', an index pointing outside
the cache, stale temporaries, a cache directory others can write to)."""
from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

from mb_sim import load_urdf
from mb_sim.codegen import load_numeric_model
from mb_sim.codegen.cache import CacheWarning, cache_directory


@pytest.fixture
def pendulum(repo):
    return load_urdf(repo / "urdf" / "pendulum.urdf")


def index_of(directory):
    (index,) = directory.glob("*.model.json")
    return index


def accelerations(model) -> np.ndarray:
    return model.forward_dynamics([0.3], [0.0], [0.0])[1]


def test_an_edited_source_is_not_loaded_from_the_cache(pendulum, tmp_path):
    reference = accelerations(load_numeric_model(pendulum, cache_dir=tmp_path))
    source = tmp_path / json.loads(index_of(tmp_path).read_text())["source"]
    # Still compiles, and computes something else: gravity pulls 10x as hard.
    edited = source.read_text().replace("= params[", "= 10.0 * params[", 1) + "\n/* tampered */\n"
    assert edited != source.read_text() + "\n/* tampered */\n"
    source.write_text(edited)
    messages: list[str] = []
    model = load_numeric_model(pendulum, cache_dir=tmp_path, progress=messages.append)
    assert any("was changed after it was generated; deriving again" in m for m in messages), messages
    assert not any("loaded from the cache" in m for m in messages)
    np.testing.assert_array_equal(accelerations(model), reference)
    assert "tampered" not in source.read_text()  # the library's own source is back
    again: list[str] = []
    load_numeric_model(pendulum, cache_dir=tmp_path, progress=again.append)
    assert any("loaded from the cache" in m for m in again)  # and trusted again


def test_an_index_naming_a_file_outside_the_cache_is_not_followed(pendulum, tmp_path):
    load_numeric_model(pendulum, cache_dir=tmp_path)
    index = index_of(tmp_path)
    entry = json.loads(index.read_text())
    for outside in ("../../../../etc/passwd", "/etc/passwd", ".hidden.c"):
        entry["source"] = outside
        index.write_text(json.dumps(entry))
        messages: list[str] = []
        load_numeric_model(pendulum, cache_dir=tmp_path, progress=messages.append)
        assert not any("loaded from the cache" in m and "model.json" in m for m in messages), (outside, messages)
        assert json.loads(index.read_text())["source"] != outside  # rewritten by the fresh build


def test_temporaries_of_a_killed_process_are_removed(pendulum, tmp_path):
    load_numeric_model(pendulum, cache_dir=tmp_path)
    library = next(tmp_path.glob("*.so"))
    dead = 2**22 + 12345  # above the default pid_max: no such process
    stale = tmp_path / f".{library.stem}.{dead}.0123456789ab.so"
    stale.write_bytes(b"half a library")
    ours = tmp_path / f".{library.stem}.{os.getpid()}.0123456789ab.so"
    ours.write_bytes(b"being written")
    other = tmp_path / "notes.txt"
    other.write_text("kept")
    messages: list[str] = []
    load_numeric_model(pendulum, cache_dir=tmp_path, progress=messages.append)
    assert not stale.exists() and ours.exists() and other.exists()
    assert any(f"removed {stale}" in m for m in messages)


def test_a_cache_directory_others_can_write_to_is_not_used(pendulum, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        directory = cache_directory(shared)
        model = load_numeric_model(pendulum, cache_dir=shared)
    assert directory != shared and directory.stat().st_mode & 0o077 == 0
    assert any(issubclass(w.category, CacheWarning) and "writable by other users" in str(w.message)
               and "chmod go-w" in str(w.message) for w in caught)
    assert not list(shared.iterdir()) and model.library_path.parent == directory


def test_entries_others_could_write_are_rebuilt(pendulum, tmp_path):
    load_numeric_model(pendulum, cache_dir=tmp_path)
    library = next(tmp_path.glob("*.so"))
    library.chmod(0o666)
    index_of(tmp_path).chmod(0o666)
    messages: list[str] = []
    load_numeric_model(pendulum, cache_dir=tmp_path, progress=messages.append)
    assert not any("from the cache" in m for m in messages), messages
    assert any("stale or corrupt; rebuilding" in m for m in messages)
