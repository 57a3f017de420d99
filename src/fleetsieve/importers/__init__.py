"""Importers: results users already hold (vLLM, GuideLLM, AIPerf) as grid rows.

``import_files(paths, fmt, workload=, tp=, out=)`` parses every file first and appends to the
grid only when all of them are good; errors name the file and the key. See docs/live.md.
"""

from fleetsieve.importers._files import FORMATS, import_files, number_repeats, parse_files
from fleetsieve.importers.aiperf import parse_aiperf
from fleetsieve.importers.guidellm import parse_guidellm
from fleetsieve.importers.vllm import parse_vllm

__all__ = ["FORMATS", "import_files", "number_repeats", "parse_aiperf", "parse_files", "parse_guidellm", "parse_vllm"]
