"""Config files are data: every YAML construct that could hide or run something is refused
with one message at file:line:column; scalars read as YAML 1.2 core says (1e-3 is a number,
010 is ten, yes is text)."""

from __future__ import annotations

import math

import pytest
import yaml
from workflow_helpers import make_workdir, snakemake, tiny_config, write_config

import motorflow as mf
import motorflow.pipeline as mfp

TINY = yaml.safe_dump(tiny_config(), sort_keys=False)

# name -> (file text, where the error points, words the message must hold)
CASES = {
    "duplicate top-level key": (
        TINY + "experiments: {}\n",
        f":{TINY.count(chr(10)) + 1}:1:",
        ["'experiments' appears twice", "first on line", "merge them"],
    ),
    "duplicate nested key": (
        "a:\n  b: 1\n  c: 2\n  b: 3\n",
        ":4:3:",
        ["'b' appears twice", "first on line 2"],
    ),
    "anchor and alias": ("a: &x {b: 1}\nc: *x\n", ":1:4:", ["anchor (&x)", "write the values"]),
    "alias bomb": (
        "a: &a [1, 1]\nb: &b [*a, *a]\nc: [*b, *b, *b]\n",
        ":1:4:",
        ["anchor"],
    ),
    "python tag": (
        "a: !!python/object/apply:os.system [ls]\n",
        ":1:4:",
        ["explicit tag (tag:yaml.org,2002:python/object/apply:os.system)", "remove the tag"],
    ),
    "str tag": ("a: !!str 1\n", ":1:4:", ["explicit tag", "quote a value"]),
    "local tag": ("a: !secret 1\n", ":1:4:", ["explicit tag (!secret)"]),
    "non-specific tag": ("a: ! 1\n", ":1:4:", ["explicit tag (!)"]),
    "yaml directive": ("%YAML 1.1\n---\na: yes\n", ":1:1:", ["%YAML", "remove it"]),
    "second document": ("a: 1\n---\nb: 2\n", ":2:1:", ["second YAML document", "remove it"]),
    "tab indentation": ("a:\n\tb: 1\n", ":2:1:", ["not valid YAML", "not tabs"]),
    "unclosed list": ("a: [1, 2\n", ":2:1:", ["not valid YAML"]),
    "bad indentation": ("a:\n  b: 1\n c: 2\n", ":3:2:", ["not valid YAML"]),
    "a list as a key": ("? [a, b]\n: 1\n", ":1:3:", ["unhashable", "never a list"]),
    "a control character": ("a: 1\nb: x\x07y\n", ":2:5:", ["U+0007", "remove it"]),
    "templating": (
        "__use_yte__: true\ntasks: {}\n",
        ": __use_yte__",
        ["templating is not allowed", "remove __use_yte__"],
    ),
    "a list, not a mapping": ("- tasks\n- models\n", "", ["must be a mapping of sections"]),
    "a bare string": ("just words\n", "", ["must be a mapping of sections"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_malformed_file_names_file_and_line(tmp_path, name):
    text, where, words = CASES[name]
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(mf.ConfigError) as error:
        mfp.load_config_file(path)
    message = str(error.value)
    assert message.startswith(f"{path}{where}"), message
    for word in words:
        assert word in message, message


def test_a_file_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_bytes("a: 1\nb: café\n".encode("latin-1"))
    with pytest.raises(mf.ConfigError) as error:
        mfp.load_config_file(path)
    assert str(error.value).startswith(f"{path}:2:7: is not UTF-8 text (byte 0xe9)"), error.value
    assert "save the file as UTF-8" in str(error.value)


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    path = tmp_path / "config.yaml"
    path.write_text("a: [" + "1, " * 3_500_000 + "1]\n")  # 10 MB
    # Parsing 10 MB would take seconds: the size alone refuses it, nothing is parsed.
    monkeypatch.setattr(yaml, "parse", None)
    monkeypatch.setattr(yaml, "load", None)
    with pytest.raises(mf.ConfigError) as error:
        mfp.load_config_file(path)
    assert str(error.value) == (
        f"{path}: is larger than 1,000,000 bytes, the most a config may be; a config needs "
        "far less: is this the right file?"
    )
    # 900 kB: read (one long text, which parses in a second; a list of 300,000 numbers
    # took 37)
    path.write_text("a: '" + "x" * 900_000 + "'\n")
    monkeypatch.undo()
    assert len(mfp.load_config_file(path)["a"]) == 900_000


def test_deep_nesting_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(mf.ConfigError) as error:
        mfp.load_config_file(path)
    assert str(error.value).startswith(f"{path}:1:67: is nested more than 64 levels deep")
    # The top mapping and 63 lists are 64 levels: still read.
    path.write_text("a: " + "[" * 63 + "]" * 63 + "\n")
    nested = []
    for _ in range(62):
        nested = [nested]
    assert mfp.load_config_file(path)["a"] == nested


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e-3", 0.001),
        ("1.0e-5", 1e-5),
        ("2E+2", 200.0),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("1.", 1.0),
        ("-1e3", -1000.0),
        (".inf", float("inf")),
        ("-.inf", float("-inf")),
        ("+.INF", float("inf")),
        ("10", 10),
        ("-7", -7),
        ("010", 10),
        ("0o10", 8),
        ("0x1F", 31),
        ("0.01", 0.01),
        ("true", True),
        ("True", True),
        ("FALSE", False),
        ("null", None),
        ("~", None),
        ("", None),
        # YAML 1.1 reads these as numbers, booleans or dates; YAML 1.2 as text.
        ("1:00", "1:00"),
        ("0b11", "0b11"),
        ("1_000", "1_000"),
        ("1_0.5", "1_0.5"),
        ("-0x1F", "-0x1F"),
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("Y", "Y"),
        ("2024-01-31", "2024-01-31"),
        ("=", "="),
        ("'1e-3'", "1e-3"),
        ("'010'", "010"),
    ],
)
def test_numbers_follow_yaml_1_2(tmp_path, text, value):
    path = tmp_path / "config.yaml"
    path.write_text(f"a: {text}\n")
    loaded = mfp.load_config_file(path)["a"]
    assert loaded == value and type(loaded) is type(value)


def test_nan_is_read_as_a_number(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: .nan\nb: .NaN\n")
    loaded = mfp.load_config_file(path)
    assert math.isnan(loaded["a"]) and math.isnan(loaded["b"])


def test_a_merge_key_is_an_ordinary_key(tmp_path):
    # YAML 1.2 has no merge key: `<<` is text, never a mapping merged in.
    path = tmp_path / "config.yaml"
    path.write_text("a:\n  <<: {b: 1}\n")
    assert mfp.load_config_file(path) == {"a": {"<<": {"b": 1}}}


def test_a_learning_rate_written_1e_3_trains_with_1e_3(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        TINY.replace(
            "trainings:\n  quick:\n", "trainings:\n  quick:\n    optimizer: {learning_rate: 1e-3}\n"
        )
    )
    config = mfp.load_config_file(path)
    experiments = mfp.resolve_experiments(config)
    assert experiments["quiet"].train.optimizer.learning_rate == 0.001


@pytest.mark.workflow
def test_snakemake_refuses_a_duplicate_key_before_any_job(tmp_path):
    workdir = make_workdir(tmp_path, tiny_config())
    config = write_config(workdir, tiny_config())
    config.write_text(config.read_text() + "experiments: {}\n")
    result = snakemake(workdir, "--dry-run", check=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "config/config.yaml:" in output and "'experiments' appears twice" in output
    assert not (workdir / "results").exists()


@pytest.mark.workflow
def test_a_configfile_with_templating_is_refused(tmp_path):
    workdir = make_workdir(tmp_path, tiny_config())
    other = workdir / "other.yaml"
    other.write_text("__use_yte__: true\n" + TINY)
    result = snakemake(workdir, "--dry-run", "--configfile", str(other), check=False)
    assert result.returncode != 0
    assert "templating is not allowed" in result.stdout + result.stderr


def test_yes_and_no_are_names_not_booleans(tmp_path):
    # A YAML 1.1 reader turns these keys into True and False; names they stay.
    config = tiny_config()
    del config["evaluation"]
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump(config)
        + "evaluation:\n  conditions:\n    yes: []\n    no: []\n    off: []\n"
    )
    settings = mfp.parse_config(mfp.load_config_file(path))
    assert list(settings.evaluation.conditions) == ["yes", "no", "off"]
