"""docs/pytorch-coverage.md (and its Chinese page) are what tools/pytorch_coverage.py measures
from PyTorch, and every provided function's signature is the one the committed table records:
changing a signature means regenerating the table (python tools/pytorch_coverage.py)."""

import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "pytorch_coverage.py"


def _tool():
    spec = importlib.util.spec_from_file_location("pytorch_coverage", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_provided_signatures_equal_the_committed_table():
    # needs no torch: dongjing's side of the record is recomputed and compared
    tool = _tool()
    record = json.loads(tool.RECORD.read_text(encoding="utf-8"))["namespaces"]
    changed = []
    checked = 0
    for key, names in record.items():
        for name, row in names.items():
            if not row["provided"]:
                continue
            provided, params = tool.dongjing_member(key, name)
            now = tool.render_params(params) if provided else "(no longer provided)"
            checked += 1
            if now != row["dongjing"]:
                changed.append(f"{key}.{name}: table {row['dongjing']}, now {now}")
    assert checked > 100
    assert not changed, ("signatures differ from docs/pytorch-coverage.md; run "
                         "python tools/pytorch_coverage.py:\n" + "\n".join(changed))


def test_the_figures_agree_with_the_record():
    tool = _tool()
    record = json.loads(tool.RECORD.read_text(encoding="utf-8"))["namespaces"]
    page = tool.PAGES["en"].read_text(encoding="utf-8")
    for key, names in record.items():
        provided = sum(row["provided"] for row in names.values())
        same = sum(row["same"] for row in names.values())
        assert all(row["provided"] for row in names.values() if row["same"])
        assert f"| {tool.NAMESPACES[key][0]} | {len(names)} | {provided} |" in page
        assert f"Provided, with PyTorch's parameters ({same}):" in page


def test_parameters_compare_by_name_order_and_default():
    tool = _tool()

    def params(fn):
        return tool._params(inspect.signature(fn), False)

    def torch_style(input, other, alpha=1, out=None): ...
    def same_but_float(input, other, alpha=1.0, out=None): ...
    def numpy_names(x, y, alpha=1, out=None): ...
    def reordered(input, other, out=None, alpha=1): ...
    def other_default(input, other, alpha=2, out=None): ...
    def bool_default(input, other, alpha=True, out=None): ...
    def variadic(*tensors): ...

    assert tool.same_parameters(params(torch_style), params(same_but_float))
    for other in (numpy_names, reordered, other_default, bool_default, variadic):
        assert not tool.same_parameters(params(torch_style), params(other)), other.__name__
    assert tool.render_params(params(variadic)) == "(*tensors)"
    assert not tool.same_parameters(params(torch_style), None)


def test_the_coverage_pages_are_current():
    pytest.importorskip("torch")
    # in a fresh process: the suite's own processes hold names and ops that tests declare
    done = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_documented_signatures_merge_overloads():
    tool = _tool()

    class Documented:
        __doc__ = """sum(input, *, dtype=None) -> Tensor

        .. function:: sum(input, dim, keepdim=False, *, dtype=None) -> Tensor
        """

    class Qualified:
        __doc__ = "linalg.cholesky(A, *, upper=False, out=None) -> Tensor"

    class Optional:
        __doc__ = "bernoulli(input: Tensor, *, generator: Optional[Generator], out) -> Tensor"

    def text(obj, name):
        return tool.render_params(tool.documented_params(obj, name))

    assert text(Documented, "sum") == "(input, dim=None, keepdim=False, dtype=None)"
    assert text(Qualified, "cholesky") == "(A, upper=False, out=None)"
    assert text(Optional, "bernoulli") == "(input, generator=None, out=None)"
    assert tool.documented_params(Documented, "mean") is None


def test_what_pytorch_accepts_is_checked_by_calling_it():
    torch = pytest.importorskip("torch")
    tool = _tool()
    from pytorch_accepts import Accepts, NotAccepted, call, verify  # beside the tool

    def check(namespace, name, accepts):
        verify(torch, namespace, name, accepts, tool._parse_documented(accepts.signature[1:]))

    right = Accepts("(input)", (lambda s: call(input=s.x),), (lambda s: call(self=s.x),))
    check("torch", "alias_copy", right)
    wrong = [
        ("the record's name", Accepts("(self)", (lambda s: call(self=s.x),))),
        ("a name no call passes", Accepts("(input, dim=0)", (lambda s: call(input=s.x),))),
        ("a wrong default", Accepts("(input, target, reduction=1, log_target=False)", (
            lambda s: call(input=s.x, target=s.p, reduction=0, log_target=True),
            lambda s: call(input=s.x, target=s.p)))),
        ("a wrong order", Accepts("(input, index, dim)", (
            lambda s: call(input=s.x, dim=1, index=2),))),
        ("a refusal that is accepted", Accepts("(input)", (lambda s: call(input=s.x),),
                                               (lambda s: call(s.x),))),
    ]
    names = {"the record's name": "alias_copy", "a name no call passes": "alias_copy",
             "a wrong default": "kl_div", "a wrong order": "select_copy",
             "a refusal that is accepted": "alias_copy"}
    for why, accepts in wrong:
        with pytest.raises(NotAccepted):
            check("torch", names[why], accepts)
    record = json.loads(tool.RECORD.read_text(encoding="utf-8"))["namespaces"]
    checked = [row for names in record.values() for row in names.values() if "accepts" in row]
    assert len(checked) > 80 and all(row["accepts"] != row["pytorch"] for row in checked)
