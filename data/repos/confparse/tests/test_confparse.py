import pytest

from confparse import parse_config
from settings import Settings, load_settings

TEXT = """
# a comment
name = demo

[server]
host = example.org
port = 8080  # the http port
debug = yes
"""


def test_sections_and_top_level_keys():
    config = parse_config("a = 1\n[s]\nb = two words\n")
    assert config == {"": {"a": "1"}, "s": {"b": "two words"}}


def test_blank_lines_and_comment_lines_are_skipped():
    assert parse_config("\n# x = 1\n   \nx = 2\n") == {"": {"x": "2"}}


def test_a_line_without_equals_is_an_error_naming_the_line():
    with pytest.raises(ValueError, match="line 2"):
        parse_config("a = 1\nnonsense\n")


def test_inline_comment_is_dropped_by_default():
    assert parse_config(TEXT)["server"]["port"] == "8080"


def test_inline_comment_kept_when_asked():
    config = parse_config("colour = #ff0000\n", strip_inline_comments=False)
    assert config[""]["colour"] == "#ff0000"


def test_settings_from_text():
    assert load_settings(TEXT) == Settings(host="example.org", port=8080, debug=True)


def test_settings_defaults():
    assert load_settings("[other]\nx = 1\n") == Settings()
