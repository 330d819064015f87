"""The simulator's runtime is split along the runtime API's sections, and stays so.

``pygraphrt/_vendors/sim/_rt_*.py`` are the sections (devices, memory, streams, events, graphs,
executable graphs, their update, graph memory, kernels), each a mixin of ``RuntimeBase``
(``_rt_base.py``: the state, lookups, capture rules and the helpers several sections share);
``SimRuntime`` (``_api.py``) composes them.  Checked here, from the source (``ast``):

* a section imports no other section, nor a module above the sections (``_api``, which composes
  them, or one that imports it), counting every import statement anywhere in the module --
  function-local and ``TYPE_CHECKING`` ones included -- and ``importlib.import_module`` /
  ``__import__`` calls (a computed module name is refused: it cannot be checked); nor does the
  base import a section;
* a section uses, through ``self``, only its own methods and the base's (a helper several
  sections need goes into the base, or is declared there), and no method is defined in two of
  them (the class order of ``SimRuntime`` would silently pick one);
* ``SimRuntime`` has every runtime function the simulator had when it was split (a floor: a new
  one needs no entry here), each exposed by the simulator's library (``SimLib``) as a C function,
  and every function the section modules define is ``SimRuntime``'s, resolving to that very code.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path

import pygraphrt

PKG = "pygraphrt._vendors.sim"
SIM = Path(pygraphrt.__file__).parent / "_vendors" / "sim"
BASE = f"{PKG}._rt_base"
COMPOSER = f"{PKG}._api"

# The runtime functions SimRuntime had when it was split into sections (137).  (The library's
# function table cannot serve as the reference: SimLib exposes whatever the runtime has.)
RUNTIME_FUNCTIONS = """
    cudaDeviceGetDefaultMemPool cudaDeviceGetGraphMemAttribute cudaDeviceGetMemPool
    cudaDeviceGetStreamPriorityRange cudaDeviceGraphMemTrim cudaDeviceSetGraphMemAttribute cudaDeviceSetMemPool
    cudaDeviceSynchronize cudaDriverGetVersion cudaEventCreate cudaEventCreateWithFlags cudaEventDestroy
    cudaEventElapsedTime cudaEventQuery cudaEventRecord cudaEventRecordWithFlags cudaEventSynchronize cudaFree
    cudaFreeAsync cudaFuncGetAttributes cudaFuncGetParamInfo cudaFuncSetAttribute cudaGetDevice
    cudaGetDeviceCount cudaGetDeviceProperties cudaGraphAddChildGraphNode cudaGraphAddDependencies
    cudaGraphAddEmptyNode cudaGraphAddEventRecordNode cudaGraphAddEventWaitNode cudaGraphAddHostNode
    cudaGraphAddKernelNode cudaGraphAddMemAllocNode cudaGraphAddMemFreeNode cudaGraphAddMemcpyNode
    cudaGraphAddMemcpyNode1D cudaGraphAddMemsetNode cudaGraphAddNode cudaGraphChildGraphNodeGetGraph
    cudaGraphClone cudaGraphConditionalHandleCreate cudaGraphCreate cudaGraphDebugDotPrint cudaGraphDestroy
    cudaGraphDestroyNode cudaGraphEventRecordNodeGetEvent cudaGraphEventRecordNodeSetEvent
    cudaGraphEventWaitNodeGetEvent cudaGraphEventWaitNodeSetEvent cudaGraphExecChildGraphNodeSetParams
    cudaGraphExecDestroy cudaGraphExecEventRecordNodeSetEvent cudaGraphExecEventWaitNodeSetEvent
    cudaGraphExecGetFlags cudaGraphExecGetId cudaGraphExecHostNodeSetParams cudaGraphExecKernelNodeSetParams
    cudaGraphExecMemcpyNodeSetParams cudaGraphExecMemcpyNodeSetParams1D cudaGraphExecMemsetNodeSetParams
    cudaGraphExecNodeSetParams cudaGraphExecUpdate cudaGraphGetEdges cudaGraphGetId cudaGraphGetNodes
    cudaGraphGetRootNodes cudaGraphHostNodeGetParams cudaGraphHostNodeSetParams cudaGraphInstantiate
    cudaGraphInstantiateWithFlags cudaGraphInstantiateWithParams cudaGraphKernelNodeCopyAttributes
    cudaGraphKernelNodeGetAttribute cudaGraphKernelNodeGetParams cudaGraphKernelNodeSetAttribute
    cudaGraphKernelNodeSetParams cudaGraphLaunch cudaGraphMemAllocNodeGetParams cudaGraphMemFreeNodeGetParams
    cudaGraphMemcpyNodeGetParams cudaGraphMemcpyNodeSetParams cudaGraphMemcpyNodeSetParams1D
    cudaGraphMemsetNodeGetParams cudaGraphMemsetNodeSetParams cudaGraphNodeFindInClone
    cudaGraphNodeGetContainingGraph cudaGraphNodeGetDependencies cudaGraphNodeGetDependentNodes
    cudaGraphNodeGetEnabled cudaGraphNodeGetLocalId cudaGraphNodeGetParams cudaGraphNodeGetToolsId
    cudaGraphNodeGetType cudaGraphNodeSetEnabled cudaGraphNodeSetParams cudaGraphRemoveDependencies
    cudaGraphUpload cudaLaunchHostFunc cudaLaunchHostFunc_v2 cudaLaunchKernel cudaLaunchKernelExC
    cudaLibraryGetKernel cudaLibraryLoadData cudaLibraryLoadFromFile cudaLibraryUnload cudaMalloc
    cudaMallocAsync cudaMallocFromPoolAsync cudaMemGetInfo cudaMemPoolCreate cudaMemPoolDestroy
    cudaMemPoolGetAttribute cudaMemPoolSetAttribute cudaMemPoolTrimTo cudaMemcpy cudaMemcpyAsync cudaMemset
    cudaMemsetAsync cudaOccupancyMaxActiveBlocksPerMultiprocessor cudaRuntimeGetVersion cudaSetDevice
    cudaStreamBeginCapture cudaStreamBeginCaptureToGraph cudaStreamCreate cudaStreamCreateWithFlags
    cudaStreamCreateWithPriority cudaStreamDestroy cudaStreamEndCapture cudaStreamGetCaptureInfo
    cudaStreamGetFlags cudaStreamGetPriority cudaStreamIsCapturing cudaStreamQuery cudaStreamSynchronize
    cudaStreamUpdateCaptureDependencies cudaStreamWaitEvent cudaThreadExchangeStreamCaptureMode
""".split()


def _module_name(path: Path) -> str:
    rel = path.relative_to(SIM.parent.parent.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sim_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SIM.glob("*.py"))}


def _sections() -> dict[str, Path]:
    """The section modules: every ``_rt_*.py`` but the base, and the module of every class
    ``SimRuntime`` is made of but the base (a section named otherwise is one too)."""
    from pygraphrt._vendors.sim._api import SimRuntime

    found = {_module_name(p): p for p in SIM.glob("_rt_*.py") if p.stem != "_rt_base"}
    for cls in SimRuntime.__mro__[1:]:
        mod = cls.__module__
        if mod.startswith(PKG + ".") and mod not in (BASE, COMPOSER):
            found.setdefault(mod, Path(sys.modules[mod].__file__ or ""))
    return found


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file: statements anywhere (module level, in
    functions, under ``if TYPE_CHECKING``), relative ones resolved; ``from X import n`` names X
    and X.n (n may be a module); ``importlib.import_module`` / ``__import__`` with a constant name
    (resolved against a constant package) and ``<computed>`` for one whose name is not a constant."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def resolve(name: str, level: int, anchor: str | None = package) -> str:
        if not level:
            return name
        if anchor is None:
            return "<computed>"
        base = anchor.rsplit(".", level - 1)[0] if level > 1 else anchor
        return f"{base}.{name}" if name else base

    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = resolve(node.module or "", node.level)
            out.append((node.lineno, target))
            out += [(node.lineno, f"{target}.{a.name}") for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Call):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called not in ("import_module", "__import__"):
                continue
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.keyword == "name"), None)
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                out.append((node.lineno, "<computed>"))
                continue
            name = arg.value
            level = len(name) - len(name.lstrip("."))
            anchor = None
            if level and called == "import_module" and len(node.args) > 1:
                pkg = node.args[1]
                anchor = pkg.value if isinstance(pkg, ast.Constant) and isinstance(pkg.value, str) else (
                    package if isinstance(pkg, ast.Name) and pkg.id == "__package__" else None)
            out.append((node.lineno, resolve(name.lstrip("."), level, anchor)))
    return out


def _above_sections(sections: set[str]) -> set[str]:
    """The simulator's modules that import a section, directly or through each other (the
    composer, and what imports it): a section must not import them either.  Packages are left
    out (``from . import _core`` imports the package first, as any import of a submodule does), and
    so is the base (its own imports are checked by themselves)."""
    modules = {m: p for m, p in _sim_modules().items() if p.name != "__init__.py"}
    above = {COMPOSER}
    grew = True
    while grew:
        grew = False
        for m, p in modules.items():
            if m not in above and m not in sections and m != BASE and any(t in sections | above for _, t in imports_of(p)):
                above.add(m)
                grew = True
    return above


def test_the_sections_are_found() -> None:
    sections = _sections()
    # the runtime API's sections, each a module of its own (a later split may add more)
    assert {m.rpartition(".")[2] for m in sections} >= {
        "_rt_device", "_rt_memory", "_rt_streams", "_rt_events", "_rt_graphs", "_rt_exec", "_rt_exec_update",
        "_rt_graph_memory", "_rt_kernels"}
    assert (SIM / "_rt_base.py").is_file()


def test_no_section_imports_another_section() -> None:
    sections = _sections()
    forbidden_all = set(sections) | _above_sections(set(sections))
    bad = []
    for mod, path in sorted(sections.items()):
        for line, target in imports_of(path):
            if target == "<computed>":
                bad.append(f"{path.name}:{line}: an import with a computed module name")
            elif target in forbidden_all - {mod}:
                bad.append(f"{path.name}:{line}: imports {target}")
    for line, target in imports_of(SIM / "_rt_base.py"):
        if target == "<computed>" or target in forbidden_all:
            bad.append(f"_rt_base.py:{line}: imports {target} (the base sits below every section)")
    assert not bad, "a section of the simulator's runtime imports another (or what composes them):\n" + "\n".join(bad)


def _runtime_classes(mod: str) -> set[str]:
    """The names of the module's classes that SimRuntime may be made of (RuntimeBase and its mixins)."""
    from pygraphrt._vendors.sim._rt_base import RuntimeBase

    module = importlib.import_module(mod)
    return {c.__name__ for c in vars(module).values()
            if inspect.isclass(c) and c.__module__ == mod and issubclass(c, RuntimeBase)}


def _class_members(mod: str, path: Path) -> tuple[set[str], set[str], set[str], set[str]]:
    """For the module's runtime classes: the names they define (methods, class attributes,
    annotated names), the names they only declare (an annotation without a value, or a method
    whose body is ``...`` or ``raise NotImplementedError``), the attributes they assign on
    ``self`` and those they read on ``self``."""
    classes = _runtime_classes(mod)
    defined: set[str] = set()
    declared: set[str] = set()
    assigned: set[str] = set()
    used: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in classes):
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined.add(item.name)
                body = [s for s in item.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                     and isinstance(s.value.value, str))]
                if all((isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is ...)
                       or (isinstance(s, ast.Raise) and "NotImplementedError" in ast.unparse(s)) for s in body):
                    declared.add(item.name)
            elif isinstance(item, ast.Assign):
                defined.update(t.id for t in item.targets if isinstance(t, ast.Name))
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                defined.add(item.target.id)
                if item.value is None:
                    declared.add(item.target.id)
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                (assigned if isinstance(node.ctx, ast.Store) else used).add(node.attr)
    return defined, declared, assigned, used


def test_a_section_uses_only_its_own_methods_and_the_bases() -> None:
    base_defined, base_declared, base_assigned, base_used = _class_members(BASE, SIM / "_rt_base.py")
    base = base_defined | base_assigned
    owner: dict[str, str] = {}
    bad = [f"_rt_base.py: self.{name} is not the base's" for name in sorted(base_used - base - set(dir(object)))]
    for mod, path in sorted(_sections().items()):
        defined, _, assigned, used = _class_members(mod, path)
        assert defined, f"{path.name} defines no class of SimRuntime"
        for name in sorted(defined):
            if name in owner:
                bad.append(f"{path.name}: {name} is defined in {owner[name]} too")
            elif name in base and name not in base_declared:
                bad.append(f"{path.name}: {name} is defined in _rt_base.py too")
            owner[name] = path.name
        for name in sorted(used - defined - base - assigned - set(dir(object))):
            bad.append(f"{path.name}: self.{name} is neither the section's nor the base's")
    assert not bad, "\n".join(bad)


def test_sim_runtime_has_every_runtime_function() -> None:
    from pygraphrt._vendors.sim._api import SimRuntime
    from pygraphrt._vendors.sim._lib import SimLib

    missing = [n for n in RUNTIME_FUNCTIONS if not callable(getattr(SimRuntime, n, None))]
    assert not missing, f"SimRuntime lost runtime functions: {missing}"
    exposed = set(dir(SimLib(SimRuntime())))
    assert not set(RUNTIME_FUNCTIONS) - exposed, "the simulator's library does not expose them"
    # every function a section module defines is SimRuntime's, resolving to that very code (a
    # section left out of SimRuntime, or one shadowed by another, fails here)
    for mod, path in sorted(_sections().items()) + [(BASE, SIM / "_rt_base.py")]:
        module = importlib.import_module(mod)
        for cls_name in sorted(_runtime_classes(mod)):
            cls = getattr(module, cls_name)
            assert cls in SimRuntime.__mro__, f"{mod}.{cls_name} is not part of SimRuntime"
            for name, value in vars(cls).items():
                if not name.startswith("__"):
                    assert inspect.getattr_static(SimRuntime, name) is value, \
                        f"SimRuntime.{name} is not {mod}.{cls_name}.{name}"
