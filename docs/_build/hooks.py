"""MkDocs hook: draw the pictures (docs/_build/pictures.py) before every build."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def on_pre_build(config, **kwargs) -> None:
    """Regenerate docs/pictures/ from the code, so the pictures cannot drift from it."""
    spec = importlib.util.spec_from_file_location(
        "dongjing_docs_pictures", Path(__file__).with_name("pictures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
