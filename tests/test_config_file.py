"""Config files are data: every YAML construct that could hide or run something is refused,
with the file and line; numbers written as 1e-3 are numbers."""

from __future__ import annotations

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
        "line",
        ["'experiments' appears twice", "first on line"],
    ),
    "duplicate nested key": (
        "a:\n  b: 1\n  c: 2\n  b: 3\n",
        "line 4",
        ["'b' appears twice", "first on line 2"],
    ),
    "anchor and alias": ("a: &x {b: 1}\nc: *x\n", "line 1, column 4", ["anchor (&x)"]),
    "alias bomb": (
        "a: &a [1, 1]\nb: &b [*a, *a]\nc: [*b, *b, *b]\n",
        "line 1",
        ["anchor"],
    ),
    "python tag": ("a: !!python/object/apply:os.system [ls]\n", "line 1", ["explicit tag"]),
    "local tag": ("a: !secret 1\n", "line 1", ["explicit tag (!secret)"]),
    "second document": ("a: 1\n---\nb: 2\n", "line 2", ["second YAML document"]),
    "tab indentation": ("a:\n\tb: 1\n", "line 2, column 1", ["not valid YAML", "tabs"]),
    "unclosed list": ("a: [1, 2\n", "line 2", ["not valid YAML"]),
    "bad indentation": ("a:\n  b: 1\n c: 2\n", "line 3", ["not valid YAML"]),
    "templating": ("__use_yte__: true\ntasks: {}\n", "__use_yte__", ["templating is not allowed"]),
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
    assert str(path) in message and where in message, message
    for word in words:
        assert word in message, message


def test_a_file_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(mf.ConfigError, match=r"line 2.*not UTF-8"):
        mfp.load_config_file(path)


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: [" + "1, " * 400_000 + "1]\n")
    with pytest.raises(mf.ConfigError, match="at most 1,000,000 bytes"):
        mfp.load_config_file(path)


def test_deep_nesting_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("a: " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(mf.ConfigError, match="nested more than 64 levels"):
        mfp.load_config_file(path)
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
        (".5", 0.5),
        ("-1e3", -1000.0),
        ("10", 10),
        ("0.01", 0.01),
        ("true", True),
        ("'1e-3'", "1e-3"),
    ],
)
def test_numbers_follow_yaml_1_2(tmp_path, text, value):
    path = tmp_path / "config.yaml"
    path.write_text(f"a: {text}\n")
    loaded = mfp.load_config_file(path)["a"]
    assert loaded == value and type(loaded) is type(value)


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
    assert "config/config.yaml, line" in output and "'experiments' appears twice" in output
    assert not (workdir / "results").exists()


@pytest.mark.workflow
def test_a_configfile_with_templating_is_refused(tmp_path):
    workdir = make_workdir(tmp_path, tiny_config())
    other = workdir / "other.yaml"
    other.write_text("__use_yte__: true\n" + TINY)
    result = snakemake(workdir, "--dry-run", "--configfile", str(other), check=False)
    assert result.returncode != 0
    assert "templating is not allowed" in result.stdout + result.stderr
