"""The README's commands are the CLI's: every ``ov3d ...`` line of its bash blocks parses with the real parser, and
the "Running on a cluster" section is docs/cluster.md word for word (issue 15: the exact commands)."""

from __future__ import annotations

import inspect
import re
import shlex
from pathlib import Path

import pytest

from ov3d_core.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None].strip()


def _commands(text: str) -> list[str]:
    """``ov3d ...`` commands of the bash blocks, backslash continuations joined, comments dropped."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("ov3d "):
                out.append(line)
    return out


COMMANDS = _commands(README)


def test_the_readme_shows_every_command_and_the_cluster_engine():
    names = {shlex.split(c)[1] for c in COMMANDS}
    assert {"evaluate", "report", "embed", "remap", "init", "demo"} <= names
    cluster = _commands(_section(README, "Running on a cluster"))
    assert any("--engine ray" in c and "--address auto" in c for c in cluster), cluster


@pytest.mark.parametrize("command", COMMANDS)
def test_each_readme_command_parses(command):
    args = build_parser().parse_args(shlex.split(command)[1:])  # SystemExit (argparse) on an unknown option
    assert callable(args.func)


def test_the_cluster_section_is_docs_cluster_md():
    assert _section(README, "Running on a cluster") == (REPO / "docs" / "cluster.md").read_text().strip()


def test_the_documented_sweep_call_exists():
    from ov3d_core.analysis.sweep import grid, sweep

    params = inspect.signature(sweep).parameters
    assert {"engine", "address"} <= set(params) and params["engine"].default == "local"
    assert len(inspect.signature(grid).parameters) >= 5  # runs, encoders, templates, thetas, protocols
