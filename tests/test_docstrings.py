"""Every public name documents itself for users of the installed package: an ``Examples``
section that runs as a doctest, ``References`` to the papers it implements, and no citation
of files users do not have."""
import doctest
import importlib
import inspect
import re
from pathlib import Path

import pytest

import sparsekit
from sparsekit.datasets import get_data_home

PACKAGES = ["sparsekit", "sparsekit.linear_model", "sparsekit.optimize", "sparsekit.losses",
            "sparsekit.projections", "sparsekit.datasets", "sparsekit.metrics", "sparsekit.gpu"]


def _public_names():
    names = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj):
                names.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return names


PUBLIC = _public_names()

#: names that implement a published method, and so cite it
IMPLEMENTS_A_PAPER = {
    "SparsemaxClassifier", "SparsemaxClassifierCV", "L1LogisticOBA", "L1LogisticOBACV",
    "l1_logistic_path",
    "ExtremeSoftmaxSGD",
    "minimize_oba", "minimize_nqn", "fmin_nqn", "minimize_newton_cg", "fenchel_young_loss",
    "fenchel_young_loss_and_grad", "sparsemax_loss", "optimal_u", "double_sum_objective",
    "double_sum_gradient", "ove_objective", "ove_gradient", "log_ove_bound", "sparsemax",
    "project_simplex", "project_capped_simplex", "project_budget", "project_knapsack",
    "project_at_least_one", "project_at_most_one", "project", "jvp",
    "make_extreme_softmax_teacher", "make_ove_toy", "make_thesis_synthetic",
}

#: examples that read a data set from the data home: skipped when it is absent
NEEDS_DATA = {
    "load_debian": "debian/debian_packages.jsonl.xz",
    "load_mnist": "mnist",
    "load_mulan": "mulan/scene-train.arff.xz",
    "load_xmlrepo": "xmlrepo/Bibtex_test.txt.xz",
}


@pytest.mark.parametrize("qualname", sorted(PUBLIC))
def test_public_name_has_an_example_that_runs(qualname):
    obj = PUBLIC[qualname]
    name = obj.__name__
    doc = inspect.getdoc(obj) or ""
    assert "\nExamples\n--------\n" in doc, f"{qualname} has no Examples section"
    if name in IMPLEMENTS_A_PAPER:
        assert "\nReferences\n----------\n" in doc, f"{qualname} cites no paper"
    if name in NEEDS_DATA and not (get_data_home() / NEEDS_DATA[name]).exists():
        pytest.skip(f"{NEEDS_DATA[name]} is not in the data home")
    tests = doctest.DocTestFinder(recurse=False).find(obj, qualname, globs={})
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    for test in tests:
        runner.run(test, out=report.append)
    assert runner.summarize(verbose=False).failed == 0, "".join(report)


#: numpydoc checks every public function and method passes: each parameter documented, in
#: the signature's order, with a type and a description, and a Returns section
NUMPYDOC_CHECKS = {"PR01", "PR02", "PR03", "PR04", "PR07", "PR10", "RT01"}


def _public_methods():
    """``module.Class.method`` of the public methods sparsekit defines on public classes
    (not those inherited from scikit-learn, whose docstrings are its own)."""
    names = []
    for qualname, obj in PUBLIC.items():
        if inspect.isclass(obj):
            for name, member in inspect.getmembers(obj, inspect.isfunction):
                if not name.startswith("_") and member.__module__.startswith("sparsekit"):
                    names.append(f"{qualname}.{name}")
    return names


@pytest.mark.parametrize("qualname", sorted(PUBLIC) + sorted(_public_methods()))
def test_public_name_documents_its_parameters_and_returns(qualname):
    validate = pytest.importorskip("numpydoc.validate").validate
    errors = [f"{code}: {message}" for code, message in validate(qualname)["errors"]
              if code in NUMPYDOC_CHECKS]
    assert not errors, "\n".join(errors)


def test_the_package_cites_no_internal_file():
    """Docstrings, comments and messages cite papers, never our notes or labels: every
    source of the package (Python, Cython, CUDA) and the gallery's examples."""
    pattern = re.compile(r"notes/|shared/|\[MINE\]|\[CODE\]|MANIFEST|§\d")
    root = Path(sparsekit.__path__[0])
    sources = [p for p in sorted(root.rglob("*")) if p.suffix in (".py", ".pyx", ".pxd", ".cu")]
    examples = root.parent / "examples"
    sources += sorted(examples.glob("*.py")) if examples.is_dir() else []
    assert len(sources) > 20
    offenders = []
    for path in sources:
        for number, line in enumerate(open(path, encoding="utf-8"), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(root.parent)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


DOC = Path(__file__).resolve().parent.parent / "doc"


@pytest.mark.skipif(not (DOC / "api.rst").exists(), reason="doc/ is not beside the tests")
def test_the_api_page_lists_every_public_name():
    """doc/api.rst generates a page for each public name (the build itself runs in CI with
    ``sphinx-build -W``)."""
    listed = set(re.findall(r"^   (\w+)$", (DOC / "api.rst").read_text(encoding="utf-8"), re.M))
    missing = sorted(q for q, obj in PUBLIC.items() if obj.__name__ not in listed)
    assert not missing, f"not on doc/api.rst: {missing}"


@pytest.mark.skipif(not (DOC / "user_guide").exists(), reason="doc/ is not beside the tests")
@pytest.mark.parametrize("name", ["SparsemaxClassifier", "L1LogisticOBA", "ExtremeSoftmaxSGD",
                                  "minimize_oba", "minimize_nqn", "minimize_newton_cg"])
def test_every_estimator_and_solver_has_a_user_guide_page(name):
    titles = [p.read_text(encoding="utf-8").split("\n=")[0]     # the text above the underline
              for p in (DOC / "user_guide").glob("*.rst")]
    titled = [t for t in titles if name in t]
    assert titled, f"no user-guide page is titled after {name}"
