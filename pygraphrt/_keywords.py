"""Keyword-only parameters for the hot methods, without CPython's per-call cost for them.

CPython fills a keyword-only parameter the caller left out by looking its default up in the
function's ``__kwdefaults__`` dict, one lookup per missing parameter on every call: for
``Graph.add_memset`` (five usually left out) about 600 machine instructions of a call that
costs the least Python wrapper 8 000-9 000 (Python 3.11 and 3.12, counted with callgrind); a
positional default is copied from a tuple instead.  So the methods named here are written with
ordinary parameters after a *guard*::

    @keywords_follow
    def add_memset(self, dst, value, count, _kw_only: KeywordsFollow = KEYWORDS, element_size=1, ...):
        if _kw_only is not KEYWORDS:
            raise positional_error("Graph.add_memset")

and keep the call forms and the errors of the keyword-only signature they document:

* a fourth positional argument lands in the guard, which the method refuses with
  :func:`positional_error`'s TypeError -- so no parameter after the guard can be given
  positionally (the compiled hot methods hand such calls to the Python method unchanged);
* type checkers read the guard's type, :class:`KeywordsFollow`, which no value a caller has is;
* ``inspect.signature``, ``help()``, Sphinx and the compiled methods' text signatures
  (``pygraphrt._fast.method_doc``) show the documented signature: :func:`keywords_follow` makes
  a declaration with a bare ``*`` in the guard's place and the same defaults and annotations,
  and sets it as the method's ``__wrapped__`` (which ``inspect`` follows) -- without importing
  ``inspect`` at start-up.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class KeywordsFollow:
    """The type of :data:`KEYWORDS`, the guard parameter's default (see the module)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


#: The guard's default: the parameters after it are keyword-only.
KEYWORDS = KeywordsFollow()

_errors: dict[str, str] = {}  # a method's qualified name -> its TypeError's text


def keywords_follow(fn: F) -> F:
    """Give ``fn`` -- a function whose parameters after a guard (default :data:`KEYWORDS`) are
    keyword-only in its documentation -- the signature it documents (its ``__wrapped__``) and
    the text of :func:`positional_error`.  Returns ``fn`` itself: no wrapper, no cost per call."""
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount]
    defaults = fn.__defaults__ or ()
    first = len(names) - len(defaults)
    guard = next((i for i, d in enumerate(defaults) if d is KEYWORDS), None)
    if guard is None or code.co_kwonlyargcount or code.co_flags & 0x0C:  # (CO_VARARGS, CO_VARKEYWORDS)
        raise TypeError(f"keywords_follow: {fn.__qualname__} needs a parameter defaulting to KEYWORDS "
                        "and no *args, **kwargs or keyword-only parameters of its own")
    guard += first
    before = [n if i < first else f"{n}=_d[{i - first}]" for i, n in enumerate(names[:guard])]
    after = [f"{n}=_d[{i - first}]" for i, n in enumerate(names[guard + 1:], guard + 1)]
    local: dict[str, Any] = {"_d": defaults}
    # Evaluated in the module's namespace (annotations resolve there), defined into `local`.
    exec(f"def {fn.__name__}({', '.join(before + ['*'] + after)}): pass", fn.__globals__, local)
    declared = local[fn.__name__]
    declared.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != names[guard]}
    declared.__doc__, declared.__qualname__, declared.__module__ = fn.__doc__, fn.__qualname__, fn.__module__
    fn.__wrapped__ = declared  # type: ignore[attr-defined]
    given = list(names[1:guard] if names and names[0] == "self" else names[:guard])
    _errors[fn.__qualname__] = (f"{fn.__qualname__}() takes {len(given)} positional argument"
                   f"{'' if len(given) == 1 else 's'} ({', '.join(given)}); "
                   f"{', '.join(names[guard + 1:])} are keyword-only")
    return fn


def positional_error(qualname: str) -> TypeError:
    """The TypeError for a call of the method ``qualname`` (given to :func:`keywords_follow`)
    that gave a keyword-only parameter positionally (or named its guard)."""
    return TypeError(_errors[qualname])
