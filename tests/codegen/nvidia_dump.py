"""Run inside an interpreter that has one pinned cuda-bindings: dump its runtime enums and functions.

Prints JSON {"version": ..., "enums": {class: {member: value}}, "functions": [...]}.
"""

import enum
import json
import re

import cuda.bindings
import cuda.bindings.runtime as rt

ENUM_PATTERN = re.compile(
    r"cudaError_t$|cudaGraph\w*|cudaStreamCapture\w*|cudaGraphMem\w*|cudaGraphInstantiate\w*"
    r"|cudaGraphExecUpdate\w*|cudaGraphDependencyType$|cudaGraphDebugDot\w*")
# cudaGraphics* is graphics interop, not graphs.
FUNC_PATTERN = re.compile(r"cudaGraph(?!ics)\w*|cudaStream\w*Capture\w*|cudaDeviceGraphMem\w*")

enums = {}
functions = []
for name in dir(rt):
    obj = getattr(rt, name)
    # Enum classes: enum.Enum subclasses, or (cuda-bindings >= 13.x) its own FastEnum with __members__.
    is_enum = isinstance(obj, type) and (issubclass(obj, enum.Enum) or hasattr(obj, "__members__"))
    if is_enum and ENUM_PATTERN.fullmatch(name):
        enums[name] = {m.name: int(m.value) for m in obj}
    elif callable(obj) and not isinstance(obj, type) and FUNC_PATTERN.fullmatch(name):
        functions.append(name)
print(json.dumps({"version": cuda.bindings.__version__, "enums": enums, "functions": sorted(functions)}))
