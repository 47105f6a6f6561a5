"""The internal model: facts built once per model, kept with it, gone with it; nowhere else.

Oracles: a fact's builder runs once per model object, whatever the reads; two models never
share a fact; a model no longer referenced takes its facts along (a weak reference to it dies);
no module of the package keeps its own table of facts keyed by model.
"""

import ast
import gc
import weakref

from project.egm.structure import STRUCTURE, egm_structure
from project.imports import SOURCE_ROOT
from project.model.internal import Fact, forget_all, internal_model, table
from project.models import ijrs


class Stand:
    """A stand-in model: any object that can be weakly referenced."""


def test_a_fact_is_built_once_per_model_and_never_shared():
    built = []
    fact = Fact("a count", build=lambda model: built.append(model) or len(built))
    one, two = Stand(), Stand()
    assert [fact.of(one), fact.of(one), fact.of(two), fact.of(one)] == [1, 1, 2, 1]
    assert built == [one, two]
    assert not Fact("another", build=len).known(one)


def test_put_replaces_what_a_solve_learned_and_known_says_so():
    window = Fact("window", build=lambda _model: 4)
    model = Stand()
    assert not window.known(model)
    assert window.of(model) == 4
    window.put(model, 9)
    assert window.known(model)
    assert window.of(model) == 9
    assert internal_model(model).facts == {"window": 9}


def test_forget_all_drops_every_models_facts_and_they_are_built_again():
    built = []
    fact = Fact("a count", build=lambda model: built.append(model) or len(built))
    one, two = Stand(), Stand()
    assert (fact.of(one), fact.of(two)) == (1, 2)
    forget_all()
    assert not fact.known(one) and not fact.known(two)
    assert internal_model(one).facts == {}
    assert (fact.of(one), fact.of(one)) == (3, 3)


def test_a_table_is_one_per_model():
    programs = table("programs")
    one, two = Stand(), Stand()
    programs.of(one)["key"] = "compiled"
    assert programs.of(one) == {"key": "compiled"}
    assert programs.of(two) == {}


def test_a_model_takes_its_facts_along():
    model = Stand()
    held = weakref.ref(Fact("held", build=lambda _model: Stand()).of(model))
    owner = weakref.ref(model)
    assert held() is not None
    del model
    gc.collect()
    assert owner() is None
    assert held() is None


def test_the_solver_reads_its_structure_from_the_internal_model():
    model = ijrs.build_model(n_periods=3)
    structure = egm_structure(model)
    assert STRUCTURE.known(model)
    assert internal_model(model).facts["EGM structure"] is structure
    assert egm_structure(model) is structure


def test_no_module_keeps_its_own_table_of_model_facts():
    """Every fact lives in ``project.model.internal``; a module-level weak table elsewhere fails."""
    kept = []
    for path in sorted((SOURCE_ROOT / "project").rglob("*.py")):
        name = str(path.relative_to(SOURCE_ROOT / "project"))
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            called = {
                getattr(n.func, "attr", getattr(n.func, "id", ""))
                for n in ast.walk(node.value)
                if isinstance(n, ast.Call)
            }
            if called & {"WeakKeyDictionary", "WeakValueDictionary"}:
                kept.append(f"{name}:{node.lineno}" if name != "model/internal.py" else name)
    assert kept == ["model/internal.py"], kept
