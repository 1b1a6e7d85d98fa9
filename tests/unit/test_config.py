import re

import pytest

from mnemoweave.config import load_config
from mnemoweave.errors import InvalidInput


def test_defaults_file_environment_and_overrides_in_that_order(mnemoweave_home, monkeypatch):
    assert load_config().trash_days == 30
    mnemoweave_home.mkdir(parents=True)
    (mnemoweave_home / "config.toml").write_text("trash_days = 14\nsearch_k = 5\n")
    assert (load_config().trash_days, load_config().search_k) == (14, 5)
    monkeypatch.setenv("MNEMOWEAVE_TRASH_DAYS", "7")
    assert load_config().trash_days == 7
    assert load_config(trash_days=1).trash_days == 1


@pytest.mark.parametrize("text", ["trash_days = 'soon'", "colour = 'blue'", "not toml ["])
def test_bad_config_is_reported_by_name(mnemoweave_home, text):
    mnemoweave_home.mkdir(parents=True)
    (mnemoweave_home / "config.toml").write_text(text)
    with pytest.raises(InvalidInput, match="config.toml|trash_days"):
        load_config()


def test_a_switch_reads_true_or_false_from_the_file_or_the_environment(
    mnemoweave_home, monkeypatch
):
    mnemoweave_home.mkdir(parents=True)
    (mnemoweave_home / "config.toml").write_text("consolidate_idle = false\n")
    assert load_config().consolidate_idle is False
    monkeypatch.setenv("MNEMOWEAVE_CONSOLIDATE_IDLE", "on")
    assert load_config().consolidate_idle is True
    monkeypatch.setenv("MNEMOWEAVE_CONSOLIDATE_IDLE", "maybe")
    with pytest.raises(InvalidInput, match="consolidate_idle: expected true or false"):
        load_config()


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ("max_memories = -1", "setting max_memories: use 0 (no limit) or more, got -1"),
        ("half_life_global_days = 0", "setting half_life_global_days: use a number of days"),
        ("half_life_days = 30", None),  # no longer a setting: ignored with a warning
    ],
)
def test_capacity_and_decay_settings_are_checked(tmp_path, setting, words):
    (tmp_path / "config.toml").write_text(setting + "\n")
    if words is None:
        assert load_config(tmp_path).half_life_global_days == 84.0
        return
    with pytest.raises(InvalidInput, match=re.escape(words)):
        load_config(tmp_path)
