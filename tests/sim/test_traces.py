"""Trace loaders: the two length-trace schemas, BurstGPT, and every kind of bad file."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from fleetsieve.errors import InputError
from fleetsieve.sim.traces import load_burstgpt, load_length_trace

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "burstgpt_synthetic.csv"
SHARED_CODE = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces" / "azure_code_2023.csv"


def _write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _fixture_rows() -> list[list[str]]:
    lines = [line for line in FIXTURE.read_text().splitlines() if not line.startswith("#")]
    return [line.split(",") for line in lines[1:]]


def test_azure_schema_with_datetime_timestamps(tmp_path):
    path = _write(
        tmp_path,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,374,44\n"
        "2023-11-16 18:15:50.9951690,396,109\n"
        "2023-11-16 18:15:51.2224670,879,29\n",
    )
    workload = load_length_trace(path)
    assert workload.name == "trace"
    assert workload.prompt_tokens.tolist() == [374, 396, 879]
    assert workload.output_tokens.tolist() == [44, 109, 29]
    np.testing.assert_allclose(workload.timestamps_s, [0.0, 4.314579, 4.541877], atol=1e-6)


def test_numeric_timestamps_are_sorted_with_their_lengths(tmp_path):
    path = _write(tmp_path, "ContextTokens,GeneratedTokens,TIMESTAMP\n10,1,5.0\n20,2,1.0\n30,3,3.0\n")
    workload = load_length_trace(path)
    assert workload.timestamps_s.tolist() == [0.0, 2.0, 4.0]
    assert workload.prompt_tokens.tolist() == [20, 30, 10]
    assert workload.output_tokens.tolist() == [2, 3, 1]


def test_vidur_schema_gzipped_and_case_insensitive_header(tmp_path):
    path = tmp_path / "lengths.csv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("# a comment line\nNum_Prefill_Tokens, num_decode_tokens ,pd_ratio\n100,7,1.5\n200,9,2.5\n")
    workload = load_length_trace(path)
    assert workload.name == "lengths"
    assert workload.prompt_tokens.tolist() == [100, 200]
    assert workload.output_tokens.tolist() == [7, 9]
    assert not workload.has_timestamps


@pytest.mark.skipif(not SHARED_CODE.is_file(), reason="shared trace data not present")
def test_real_azure_code_file_loads_with_its_burstiness():
    workload = load_length_trace(SHARED_CODE)
    assert len(workload) == 8819
    assert workload.trace_interarrival_cv == pytest.approx(13.15, abs=0.01)


def test_burstgpt_fixture_drops_failed_rows():
    rows = _fixture_rows()
    served = [r for r in rows if int(r[3]) > 0]
    assert len(served) < len(rows)  # the fixture does contain failed rows
    workload = load_burstgpt(FIXTURE)
    assert workload.name == "burstgpt"
    assert workload.prompt_tokens.tolist() == [int(r[2]) for r in served]
    assert workload.output_tokens.tolist() == [int(r[3]) for r in served]
    assert workload.timestamps_s.tolist() == [float(r[0]) - float(served[0][0]) for r in served]


def test_burstgpt_model_filter():
    rows = [r for r in _fixture_rows() if r[1] == "GPT-4" and int(r[3]) > 0]
    workload = load_burstgpt(FIXTURE, model="GPT-4")
    assert workload.name == "burstgpt:GPT-4"
    assert workload.prompt_tokens.tolist() == [int(r[2]) for r in rows]
    stream = workload.sample(rate_rps=2.0, duration_s=100.0, arrival="trace", seed=0)
    assert len(stream) > 100


def test_burstgpt_unknown_model_lists_the_models():
    with pytest.raises(InputError, match="no rows for model 'llama'; models in file: ChatGPT, GPT-4"):
        load_burstgpt(FIXTURE, model="llama")


def test_burstgpt_all_rows_failed(tmp_path):
    path = _write(tmp_path, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,10,0,10,API log\n")
    with pytest.raises(InputError, match="no usable rows"):
        load_burstgpt(path)


def test_burstgpt_missing_column(tmp_path):
    path = _write(tmp_path, "Timestamp,Model,Request tokens,Total tokens\n1,ChatGPT,10,10\n")
    with pytest.raises(InputError, match=r"trace\.csv: missing column 'Response tokens'"):
        load_burstgpt(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"trace\.csv: empty file"),
        ("# only a comment\n\n", r"trace\.csv: empty file"),
        ("ContextTokens,GeneratedTokens\n", r"trace\.csv: has a header but no data rows"),
        ("prompt,output\n1,2\n", r"trace\.csv: missing columns: need \(ContextTokens, GeneratedTokens\)"),
        ("ContextTokens,GeneratedTokens\n1,2\n3,abc\n", r"trace\.csv:3: column 'GeneratedTokens': 'abc' is not a finite"),
        ("ContextTokens,GeneratedTokens\n1,2\n3,nan\n", r"trace\.csv:3: column 'GeneratedTokens': 'nan' is not a finite"),
        ("ContextTokens,GeneratedTokens\n1,2\n\n3\n", r"trace\.csv:4: has 1 fields, the header has 2"),
        ("ContextTokens,GeneratedTokens\n0,2\n", r"trace\.csv:2: column 'ContextTokens': '0' is not a whole number >= 1"),
        ("ContextTokens,GeneratedTokens\n5,2.5\n", r"trace\.csv:2: column 'GeneratedTokens': '2.5' is not a whole number"),
        ("ContextTokens,GeneratedTokens\n5,-2\n", r"trace\.csv:2: column 'GeneratedTokens': '-2' is not a whole number"),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,2\nyesterday,1,2\n",
            r"trace\.csv:3: column 'TIMESTAMP': 'yesterday' is neither seconds nor a date-time",
        ),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n1.0,1,2\ninf,1,2\n", r"trace\.csv:3: column 'TIMESTAMP': 'inf'"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n1.0,1,2\n1.0,1,2\n", r"trace\.csv: timestamps must span a positive time"),
    ],
)
def test_bad_length_trace_files(tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        load_length_trace(_write(tmp_path, text))


def test_bad_burstgpt_value_names_line_and_column(tmp_path):
    path = _write(
        tmp_path,
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,10,5,15,API log\n2,ChatGPT,ten,5,15,API log\n",
    )
    with pytest.raises(InputError, match=r"trace\.csv:3: column 'Request tokens': 'ten' is not a finite number"):
        load_burstgpt(path)


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_length_trace(tmp_path / "absent.csv")
    binary = tmp_path / "trace.csv"
    binary.write_bytes(b"\xff\xfe\x00\x81" * 10)
    with pytest.raises(InputError, match="cannot read as CSV text"):
        load_length_trace(binary)
    not_gzip = _write(tmp_path, "ContextTokens,GeneratedTokens\n1,2\n", name="plain.csv.gz")
    with pytest.raises(InputError, match="cannot read as CSV text"):
        load_length_trace(not_gzip)
