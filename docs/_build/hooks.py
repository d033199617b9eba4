"""MkDocs hook: draw the pictures (docs/_build/pictures.py) before every build."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mkdocs.plugins import event_priority


def on_pre_build(config, **kwargs) -> None:
    """Regenerate docs/pictures/ from the code, so the pictures cannot drift from it."""
    spec = importlib.util.spec_from_file_location(
        "dongjing_docs_pictures", Path(__file__).with_name("pictures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()


@event_priority(-200)  # after mkdocs-static-i18n (50), whose on_page_context resets the links
def on_page_context(context, page, config, nav):
    """Point the language switch at this page's twin with a link relative to the page.

    mkdocs-static-i18n gives the two home pages absolute links (`/`, `/zh/`), which break when
    the site is served under a sub-path; the theme's `url` filter makes a site-relative URL
    relative to the page it is on.
    """
    twins = getattr(page.file, "alternates", {}) or {}
    # the plugin sets `config.extra.alternate` as an attribute, which the theme's templates
    # read before the mapping's item of the same name
    switch = getattr(config.extra, "alternate", None) or config.extra.get("alternate", [])
    for alternate in switch:
        twin = twins.get(alternate["lang"])
        if twin is not None:
            alternate["link"] = twin.url or "./"
    return context

